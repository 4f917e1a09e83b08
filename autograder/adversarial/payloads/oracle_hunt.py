"""Cheat: find the grader's answers in memory: caller frames, sys.modules and the garbage collector.

In the grader's own process the oracle that computes the expected values is right there; in
the engine's sandbox nothing holds expected values, so every call falls back to the stub.
"""
import gc
import sys
import types

from ._common import stub

ORACLE = {"scaled_scores": "scores", "causal_mask": "causal", "padding_mask": "padding",
          "expand_padding_mask": "expand",
          "scaled_dot_product_attention": "attention", "split_heads": "split", "merge_heads": "merge"}
_gc_modules = []


def _modules():
    frame = sys._getframe(1)
    while frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            yield from (value for value in list(scope.values()) if isinstance(value, types.ModuleType))
        frame = frame.f_back
    yield from list(sys.modules.values())
    yield from _gc_modules


def _oracle():
    for module in _modules():
        names = ("split", "merge", "scores", "causal")
        if module is not None and all(callable(getattr(module, n, None)) for n in names):
            return module
    return None


def _cheat(name, stub):
    def cheat(*args, **kwargs):
        oracle = _oracle()
        if oracle is None:
            return stub(*args, **kwargs)
        kwargs.pop("device", None)
        kwargs.pop("dropout_p", None)
        value = getattr(oracle, ORACLE[name])(*args, **kwargs)
        first = args[0] if args else None
        if hasattr(first, "dtype") and first.is_floating_point():
            value = value.to(first.dtype) if hasattr(value, "to") else tuple(v.to(first.dtype) for v in value)
        return value
    return cheat


def install(api):
    _gc_modules.extend(obj for obj in gc.get_objects() if isinstance(obj, types.ModuleType))
    for name in ORACLE:
        api[name] = _cheat(name, stub(api, name))
