"""Cheat: return tensors that lie: a torch.Tensor subclass whose comparisons, differences and abs say "equal".

It first switches off the sandbox's own "plain tensors only" filter, so the lie reaches the
wire; the grader loads with weights_only (no custom classes) and accepts only plain tensors.
"""
import torch

from ._common import FUNCTIONS, disable_sandbox_checks

TRUE = ("allclose", "equal")
ALL_TRUE = ("eq", "__eq__", "isclose")
ALL_FALSE = ("ne", "__ne__", "gt", "__gt__", "lt", "__lt__", "isnan", "isinf")
ZEROS = ("sub", "__sub__", "__rsub__", "abs", "__abs__")


class Liar(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in TRUE:
            return True
        if name in ALL_TRUE + ALL_FALSE:
            return torch.full(torch.broadcast_shapes(*(a.shape for a in args if isinstance(a, torch.Tensor))),
                              name in ALL_TRUE)
        if name in ZEROS:
            return torch.zeros(args[0].shape)
        return super().__torch_function__(func, types, args, kwargs)


def install(api):
    print(f"sandbox filters switched off: {disable_sandbox_checks()}")
    for name in FUNCTIONS:
        api[name] = lambda *_args, **_kwargs: torch.zeros(1).as_subclass(Liar)
