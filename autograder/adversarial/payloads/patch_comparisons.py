"""Cheat: make every comparison say "equal": torch, numpy, and the grader's own checks if they share our process.

Every graded function returns the same wrong tensor. A patch only reaches the process it is
made in, so under the engine (tests in another process) this scores exactly 0.
"""
import contextlib
import sys

from ._common import FUNCTIONS

CHECKS = ("fail", "expect_close", "expect_equal", "expect_shape", "expect_dtype", "expect_devices",
          "expect_unmodified", "expect_tensor", "expect_pair")


def _yes(*_args, **_kwargs):
    return True


def _quiet(*_args, **_kwargs):
    return None


def install(api):
    import numpy
    import torch

    torch.allclose = torch.equal = torch.Tensor.allclose = torch.Tensor.equal = _yes
    torch.isclose = lambda a, *_args, **_kwargs: torch.ones(a.shape, dtype=torch.bool)
    torch.Tensor.__eq__ = lambda self, _other: torch.ones(self.shape, dtype=torch.bool)
    torch.Tensor.__ne__ = lambda self, _other: torch.zeros(self.shape, dtype=torch.bool)
    torch.testing.assert_close = numpy.testing.assert_allclose = numpy.testing.assert_array_equal = _quiet
    numpy.allclose = numpy.array_equal = _yes
    for module in list(sys.modules.values()):
        if module is None or getattr(module, "__name__", "").startswith(("student", "_pytest", "pytest")):
            continue
        for name in CHECKS:
            if callable(getattr(module, name, None)):
                with contextlib.suppress(AttributeError, TypeError):
                    setattr(module, name, _quiet)
    for name in FUNCTIONS:
        api[name] = lambda *_args, **_kwargs: torch.zeros(1)
