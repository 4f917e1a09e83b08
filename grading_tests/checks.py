"""Assertions for the hidden suite: failure messages a student can act on, no hidden tensors.

Every check raises AssertionError(text) itself, so the text is exactly what the student
reads (pytest's assertion rewriting would otherwise print tensor reprs).
A message names the call by the shapes and dtypes of its inputs, never their values,
and shows at most one wrong entry.
"""
from __future__ import annotations

import math

import torch

from grader.gateway import CallOptions, CallResult, GradedFunction, ModuleResult, ModuleSpec, StudentError
from grading_tests.tolerance import Tolerance, as_float64, grading_tolerance, looks_like_float32_rounding


def fail(message: str, *, raised: bool = False):
    """Fail the test with message. raised: the student's code raised (rather than returned a wrong answer), which a
    test may tell apart with student_raised()."""
    failure = AssertionError(message)
    failure.student_raised = raised   # type: ignore[attr-defined]
    raise failure


def student_raised(failure: AssertionError) -> bool:
    return getattr(failure, "student_raised", False)


def describe(value) -> str:
    """A short description of an argument: shape and dtype for tensors, repr for the rest."""
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        return f"tensor{tuple(value.shape)} {dtype}"
    if isinstance(value, (list, tuple)) and len(value) > 8:
        return f"{type(value).__name__} of {len(value)}"
    return repr(value)


def describe_call(function: str, args=(), kwargs=None) -> str:
    parts = [describe(a) for a in args] + [f"{k}={describe(v)}" for k, v in (kwargs or {}).items()]
    return f"{function}({', '.join(parts)})"


def call(function: GradedFunction, *args, options: CallOptions = CallOptions(), **kwargs) -> CallResult:
    """function(*args, **kwargs), a graded function (student.<name>); the student's exception becomes a failure
    that names the call."""
    try:
        return function(*args, options=options, **kwargs)
    except StudentError as error:
        fail(f"{describe_call(function.name, args, kwargs)} raised {error.type_name}: {error.message}", raised=True)


def run_module(student, spec: ModuleSpec, options: CallOptions = CallOptions()) -> ModuleResult:
    try:
        return student.run_module(spec, options)
    except StudentError as error:
        forward = ""
        if spec.forward_kwargs is not None:
            forward = "." + describe_call(spec.method, (), spec.forward_kwargs)
        mode = " in training mode" if spec.training else ""
        fail(f"{describe_call('MultiHeadAttention', (), spec.init_kwargs)}{forward}{mode} "
             f"raised {error.type_name}: {error.message}", raised=True)


def expect_raises(function: GradedFunction, error_type: str, *args, why: str, **kwargs):
    try:
        function(*args, **kwargs)
    except StudentError as error:
        if error.type_name != error_type:
            fail(f"{describe_call(function.name, args, kwargs)} raised {error.type_name} ({error.message}); "
                 f"expected {error_type}: {why}")
        return error
    fail(f"{describe_call(function.name, args, kwargs)} returned normally; expected {error_type}: {why}")


def expect_tensor(got, what: str) -> torch.Tensor:
    if not isinstance(got, torch.Tensor):
        fail(f"{what} should be a tensor, got {type(got).__name__}")
    if got.device.type == "meta":
        fail(f"{what} is a tensor of the meta device, which holds no values: compute the result on the inputs' "
             f"device")
    return got


def expect_pair(value, what: str):
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        fail(f"{what} should return a pair (output, weights), got {type(value).__name__}"
             + (f" of length {len(value)}" if isinstance(value, (tuple, list)) else ""))
    return value


def expect_shape(got, shape, what: str):
    expect_tensor(got, what)
    if tuple(got.shape) != tuple(shape):
        fail(f"{what} has shape {tuple(got.shape)}, expected {tuple(shape)}")


def expect_result(result: CallResult, shapes, what: str) -> CallResult:
    """What every property test asks first: the call returned a result with as many entries as the
    promised shape (for a pair (output, weights), each), not one value repeated. A property of
    something not computed from the inputs is no property of the function (a cheat returning a
    constant gets nothing). The exact shape and the values are left to the value tests."""
    if shapes and isinstance(shapes[0], tuple):
        pair = expect_pair(result.value, what)
        for got, shape, name in zip(pair, shapes, ("output", "weights"), strict=True):
            expect_computed(got, shape, f"the {name} of {what}")
    else:
        expect_computed(result.value, shapes, what)
    return result


def expect_computed(got, shape, what: str):
    """A tensor with the entries of `shape`, not one value repeated in all of them (every property test
    feeds inputs whose true result varies)."""
    expect_tensor(got, what)
    if got.numel() != math.prod(shape):
        fail(f"{what} has shape {tuple(got.shape)} ({got.numel()} entries), expected {tuple(shape)}")
    if got.numel() < 2:
        return
    flat = got.detach().flatten()
    first = flat[0]
    same = torch.isnan(flat).all() if torch.isnan(first) else (flat == first).all()
    if same:
        fail(f"{what} holds the same value ({first.item()}) in every entry, for inputs whose result varies: "
             f"return what the function computes from its inputs")


def expect_dtype(got, dtype, what: str):
    if got.dtype != dtype:
        fail(f"{what} has dtype {got.dtype}, expected {dtype} (keep the input dtype: no .float()/.double() casts)")


def expect_devices(result, device: str, what: str):
    wrong = [d for d in result.devices if d.split(":")[0] != device.split(":")[0]]
    if wrong:
        fail(f"{what} returned a tensor on {wrong[0]} for inputs on {device}: create tensors with "
             f"device=<the inputs' device> (for example torch.ones(..., device=scores.device))")


def expect_unmodified(result, what: str, names=None):
    if result.inputs_mutated:
        which = result.inputs_mutated[0]
        label = names[which] if names and isinstance(which, int) and which < len(names) else which
        fail(f"{what} modified its input {label!r} in place; work on a new tensor (masked_fill, not masked_fill_)")


def _first_bad(bad: torch.Tensor):
    return tuple(torch.nonzero(bad)[0].tolist())


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _fmt_pair(got: float, expected: float) -> tuple[str, str]:
    """Both numbers with as many digits as it takes to see them differ (6 when they do at once)."""
    for digits in (6, 10, 17):
        shown = f"{got:.{digits}g}", f"{expected:.{digits}g}"
        if shown[0] != shown[1]:
            break
    return shown


def expect_close(got, expected, what: str, *, dtype=None, atol=None, rtol=None, tolerance: Tolerance | None = None,
                 hints=()):
    """got (student, any float dtype) against expected (oracle, float64), same shape.

    The tolerance is `tolerance`, else the grading tolerance of `dtype` (default: got's dtype) with
    atol/rtol overriding its parts. The message names the tolerance that failed.
    hints: (text, fn) pairs; fn() returns the output of a known mistake (or None). The first
    mistake whose output matches got is named in the message.
    """
    expect_shape(got, expected.shape, what)
    if not got.is_floating_point():
        fail(f"{what} has dtype {got.dtype}, expected a floating-point tensor")
    dtype = dtype or got.dtype
    if tolerance is None:
        base = grading_tolerance(dtype)
        tolerance = Tolerance(base.atol if atol is None else atol, base.rtol if rtol is None else rtol)
    got64, exp64 = as_float64(got), as_float64(expected)
    nan = torch.isnan(got64) & ~torch.isnan(exp64)
    if nan.any():
        where = _first_bad(nan)
        fail(f"{what} contains NaN (first at index {where}, {int(nan.sum())} in all), expected "
             f"{_fmt(exp64[where].item())} there. A row whose keys are all masked must give zeros: "
             f"softmax over only -inf is NaN")
    bad = tolerance.violations(got64, exp64)
    if not bad.any():
        return
    where = _first_bad(bad)
    error = (got64 - exp64).abs()
    finite = error[torch.isfinite(error)]
    shown_got, shown_expected = _fmt_pair(got64[where].item(), exp64[where].item())
    message = (f"{what} is wrong at {int(bad.sum())} of {bad.numel()} entries; first at index {where}: "
               f"got {shown_got}, expected {shown_expected}; "
               f"max abs error {_fmt(finite.max().item() if finite.numel() else float('inf'))} "
               f"(allowed: |got - expected| <= atol + rtol * |expected| with {tolerance.describe()})")
    if looks_like_float32_rounding(got64, exp64, dtype):
        fail(message + ". Hint: the error is the size of float32 rounding: float64 inputs must be computed in "
             "float64 throughout (no .float(), no dtype=torch.float32 in the softmax, no float32 tensor in the "
             "scale such as torch.sqrt(torch.tensor(E))); only float16 and bfloat16 may be computed in float32")
    hint = matching_hint(got64, hints, tolerance)
    fail(message + (f". Hint: {hint}" if hint else ""))


def matching_hint(got64, hints, tolerance: Tolerance):
    for text, make in hints:
        try:
            candidate = make()
        except Exception:  # noqa: BLE001 - a hint that does not apply to these shapes is just skipped
            continue
        if isinstance(candidate, tuple):
            candidate = candidate[0]
        if candidate is None or tuple(candidate.shape) != tuple(got64.shape):
            continue
        candidate = torch.nan_to_num(candidate.to(torch.float64), nan=0.0)
        if not tolerance.violations(torch.nan_to_num(got64, nan=0.0), candidate).any():
            return text
    return None


def expect_equal(got, expected, what: str, hints=()):
    """Exact equality, for masks and for the heads' rearrangements."""
    expect_shape(got, expected.shape, what)
    if got.dtype != expected.dtype:
        fail(f"{what} has dtype {got.dtype}, expected {expected.dtype}")
    bad = got != expected
    if expected.is_floating_point():
        bad &= ~(torch.isnan(got) & torch.isnan(expected))
    if not bad.any():
        return
    where = _first_bad(bad)
    message = (f"{what} is wrong at {int(bad.sum())} of {bad.numel()} entries; first at index {where}: "
               f"got {got[where].item()}, expected {expected[where].item()}")
    for text, make in hints:
        candidate = make()
        if candidate is not None and candidate.shape == got.shape and torch.equal(candidate.to(got.dtype), got):
            message += f". Hint: {text}"
            break
    fail(message)


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(*shape, seed: int, dtype=torch.float32, scale: float = 1.0) -> torch.Tensor:
    return (torch.randn(*shape, generator=generator(seed), dtype=torch.float64) * scale).to(dtype)


def in_a_batch(example: torch.Tensor, seed: int, size: int = 3) -> torch.Tensor:
    """The lesson's example as item 0 of a batch whose other items are random: a value test of a printed
    example then also needs the result of inputs nobody printed (a table of the handout's answers fails it)."""
    rest = randn(size - 1, *example.shape, seed=seed, dtype=example.dtype)
    if example.dtype == torch.bool:
        rest = rest > 0
    return torch.cat([example.unsqueeze(0), rest])


def laid_out(x: torch.Tensor) -> dict[str, torch.Tensor]:
    """x's values in the layouts real callers pass, each a view (the engine's wire keeps the layout): stored
    transposed (the last two dims swapped in memory), stored in the reverse order of its dims, and sliced out of
    a wider tensor (an offset, and rows further apart than their length). Each equals x."""
    order = list(reversed(range(x.dim())))
    wider = torch.zeros(*x.shape[:-1], x.shape[-1] + 3, dtype=x.dtype)
    wider[..., 2:2 + x.shape[-1]] = x
    views = {"a sliced view": wider[..., 2:2 + x.shape[-1]]}
    if x.dim() >= 2:
        views["a transposed view"] = x.transpose(-2, -1).contiguous().transpose(-2, -1)
    if x.dim() >= 3:
        views["a permuted view"] = x.permute(order).contiguous().permute(order)
    return views
