"""Attention in PyTorch, from scratch: the graded API.

The grader imports this package and uses only the names below; organise the
rest of your code however you like. Run `python -m student.check` to see
which parts pass the public checks.

Each name is imported from its module on first use, so a mistake in one file
(a syntax error, a missing package) does not stop the checks, or the grading,
of the other parts.
"""
import importlib

# Generated from the assignment's declaration: do not edit (your instructor's `python -m autograder generate`).
# name -> the module of this package that defines it
_HOMES = {
    "scaled_scores": "scaling",
    "causal_mask": "masking",
    "padding_mask": "masking",
    "apply_mask": "masking",
    "scaled_dot_product_attention": "masking",
    "split_heads": "heads",
    "merge_heads": "heads",
    "expand_padding_mask": "padding",
    "MultiHeadAttention": "multihead",
}

__all__ = list(_HOMES)


def __getattr__(name):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
