"""How close is close enough: the one tolerance table and the one closeness rule of the hidden suite.

An entry passes when |got - expected| <= atol + rtol * |expected| (the rule of torch.isclose), or
when both are the same infinity or both NaN. Every comparison of the suite (checks.expect_close,
the GPU agreement checks of lowp_tolerance.py) goes through Tolerance.violations.

Per dtype the table holds two tolerances:
- `grading`: what the CPU tests allow a result computed in that dtype, against the float64 oracle.
  Low-precision bounds are a few units in the last place of values of order 1; float64's is tight
  enough that a float32 computation of float64 inputs fails, even one rounding a single factor (a
  float32 scale errs by up to 6e-8 of it) (the contract: float64 inputs are never computed in lower
  precision), and loose enough for any order of float64 arithmetic (its rounding is 1e-16).
- `floor`: torch.testing's default tolerance for the dtype, the smallest tolerance the GPU checks
  derive (PyTorch's SDPA tests use the same floors; see lowp_tolerance.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float

    def violations(self, got: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
        """Bool mask of the entries of got outside the tolerance around expected (compared in float64 on the CPU)."""
        got64, expected64 = as_float64(got), as_float64(expected)
        within = (got64 - expected64).abs() <= self.atol + self.rtol * expected64.abs()
        same = (got64 == expected64) | (torch.isnan(got64) & torch.isnan(expected64))
        return ~(within | same)

    def describe(self) -> str:
        return f"atol={self.atol:.3g}, rtol={self.rtol:.3g}"


@dataclass(frozen=True)
class DtypeTolerances:
    grading: Tolerance
    floor: Tolerance


TOLERANCES = {
    torch.float64: DtypeTolerances(grading=Tolerance(1e-12, 1e-10), floor=Tolerance(1e-7, 1e-7)),
    torch.float32: DtypeTolerances(grading=Tolerance(2e-5, 2e-4), floor=Tolerance(1e-5, 1.3e-6)),
    torch.float16: DtypeTolerances(grading=Tolerance(1.5e-2, 1.5e-2), floor=Tolerance(1e-3, 1e-3)),
    torch.bfloat16: DtypeTolerances(grading=Tolerance(6e-2, 6e-2), floor=Tolerance(1e-3, 1.6e-2)),
}


def grading_tolerance(dtype: torch.dtype) -> Tolerance:
    return TOLERANCES[dtype].grading


def floor_tolerance(dtype: torch.dtype) -> Tolerance:
    return TOLERANCES[dtype].floor


def as_float64(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach().to("cpu", torch.float64)


def looks_like_float32_rounding(got: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype) -> bool:
    """True when a float64 result misses float64's tolerance but is within float32's: computed in float32."""
    return dtype == torch.float64 and not grading_tolerance(torch.float32).violations(got, expected).any()


def agree(got: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float = 1e-5) -> bool:
    """Two results that must be equal up to float32 rounding (a submission against itself, for the
    invariance tests): same shape and no entry outside Tolerance(atol, rtol) (rtol as torch.allclose's)."""
    return got.shape == expected.shape and not Tolerance(atol, rtol).violations(got, expected).any()
