"""Low-precision agreement checks for MultiHeadAttention, with tolerances derived as PyTorch's SDPA tests do.

PyTorch's test/test_transformers.py ("[Note] Fused Tolerances", e.g.
test_mem_efficient_attention_vs_math_ref_grads) runs three computations on the same inputs:

    golden   the math in high precision (here: float64, grading_tests.oracle)
    low      the same math in the working dtype, on the same device: the "low-precision math reference"
    tested   the code under test, in the working dtype

and accepts `tested` when |tested - golden| <= atol + rtol * |golden| elementwise, where atol and
rtol are the low-precision reference's own error against golden (never below torch.testing's
default tolerances for the dtype), times a fudge factor. The bar is "about as accurate as
straightforward math in this dtype", so it adapts to the dtype, the shapes and the device.

One change to PyTorch's recipe, for grading: PyTorch takes rtol as the largest relative error
over ALL entries, and entries whose golden value is close to 0 make that ratio arbitrarily large
(a tolerance that accepts almost anything; harmless when testing a kernel, fatal when grading).
Here the relative error is taken only over entries with |golden| >= RTOL_FLOOR_SCALE * max|golden|;
near-zero entries are covered by atol, exactly as in PyTorch.

Everything here runs on any device: the project tests run it on the CPU in float16/bfloat16,
the CUDA tests in test_part6_cuda.py on a GPU.
"""
from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from grader.gateway import SDPA_BACKENDS, CallOptions, ModuleSpec, restricting_sdpa, vector_jacobian
from grading_tests import oracle
from grading_tests.checks import expect_close, expect_shape, run_module
from grading_tests.tolerance import Tolerance, as_float64, floor_tolerance

RTOL_FLOOR_SCALE = 0.1
# PyTorch fudges fused-kernel gradients by 1.5 (queries) up to 12 (keys); a student's code may order
# its operations differently from the low-precision reference, so both get more room. Real bugs
# (a missing scale, an ignored mask) miss by two or more orders of magnitude more (tests/test_cuda_tolerance.py).
OUTPUT_FUDGE = 4.0
GRAD_FUDGE = 8.0

BACKENDS = tuple(SDPA_BACKENDS)   # flash, efficient, cudnn, math


def derive_tolerance(golden: torch.Tensor, low: torch.Tensor, fudge: float = 1.0) -> Tolerance:
    """atol/rtol from the low-precision reference's error against golden (PyTorch's get_tolerances)."""
    dtype = low.dtype
    golden64, low64 = as_float64(golden), as_float64(low)
    deviation = (golden64 - low64).abs()
    atol = deviation.max().item() if deviation.numel() else 0.0
    magnitude = golden64.abs()
    big = magnitude >= RTOL_FLOOR_SCALE * magnitude.max() if magnitude.numel() else magnitude.bool()
    rtol = (deviation[big] / magnitude[big]).max().item() if big.any() and magnitude.max() > 0 else 0.0
    if not math.isfinite(atol) or not math.isfinite(rtol):
        raise ValueError(f"the {dtype} reference is not finite: these inputs overflow {dtype}")
    floor = floor_tolerance(dtype)
    return Tolerance(atol=fudge * max(atol, floor.atol), rtol=fudge * max(rtol, floor.rtol))


# ---------------------------------------------------------------- the inputs

@dataclass(frozen=True)
class Case:
    """One MultiHeadAttention call. Sizes are odd on purpose: no length is a multiple of a kernel's tile."""
    name: str
    queries: int = 37
    keys: int | None = None               # None: self-attention over the queries
    key_lengths: tuple[int, ...] | None = None   # real tokens per batch row of the keys; None: no padding
    is_causal: bool = False
    embed_dim: int = 64
    num_heads: int = 4                    # head dim 16: a multiple of 8, as every fused CUDA kernel wants
    input_scale: float = 1.0              # the inputs' spread: larger scores where it is above 1
    # A batch row with no visible key: the manual path's output is graded there (zero, as the handout says), the
    # gradients are not (the handout asks nothing of them there, and a plain softmax over only -inf gives NaN, which
    # reaches every weight).
    forward_only: bool = False

    @property
    def batch(self) -> int:
        return 3 if self.key_lengths is None else len(self.key_lengths)

    @property
    def key_count(self) -> int:
        return self.queries if self.keys is None else self.keys


# The handout's convention for a query with no visible key (all-zero weights, a zero output) is checked on the manual
# path by the empty-row case. Not on the fused one: SDPA's backends differ there (cuDNN on an H200 gives such a row
# the mean of the values for a bool mask, the others zeros), so there the answer would grade the backend; the CPU's
# test_fused_sequence_with_no_real_token_gets_no_attention holds the fused path to the handout's zero.
CASES = (
    Case("self"),
    Case("self-causal", is_causal=True),
    Case("self-padding", key_lengths=(37, 20, 1)),
    Case("self-padding-causal", key_lengths=(37, 20, 1), is_causal=True),
    Case("cross", keys=53),
    Case("cross-padding", keys=53, key_lengths=(53, 30, 7)),
    Case("cross-padding-empty-row", keys=53, key_lengths=(53, 0, 7), forward_only=True),
    Case("self-causal-wide-heads-large-scores", is_causal=True, embed_dim=128, num_heads=2, input_scale=4.0),
)


@dataclass(frozen=True)
class Inputs:
    """The grader's copies, already rounded to the dtype the student's module runs in."""
    state: dict              # float32 values exactly representable in dtype (load_state_dict keeps them)
    forward: dict            # x, context, padding_mask, is_causal
    grad_output: torch.Tensor
    dtype: torch.dtype


def make_inputs(case: Case, dtype: torch.dtype, seed: int = 6) -> Inputs:
    gen = torch.Generator().manual_seed(seed)
    state = {name: value.to(dtype).to(torch.float32) for name, value in oracle.random_state(case.embed_dim,
                                                                                            seed=seed).items()}
    shape_x = (case.batch, case.queries, case.embed_dim)
    x = (torch.randn(shape_x, generator=gen, dtype=torch.float64) * case.input_scale).to(dtype)
    context = None
    if case.keys is not None:
        context = (torch.randn(case.batch, case.keys, case.embed_dim, generator=gen, dtype=torch.float64)
                   * case.input_scale).to(dtype)
    mask = None if case.key_lengths is None else oracle.padding(case.key_lengths, case.key_count)
    grad_output = torch.randn(shape_x, generator=gen, dtype=torch.float64).to(dtype)
    forward = {"x": x, "context": context, "padding_mask": mask, "is_causal": case.is_causal}
    return Inputs(state, forward, grad_output, dtype)


# ---------------------------------------------------------------- the two references

def low_precision_mha(state, num_heads, x, context=None, padding_mask=None, is_causal=False):
    """The oracle's multi-head attention computed plainly in the inputs' dtype and on their device."""
    return oracle.mha(state, num_heads, x, context, padding_mask, is_causal, dtype=x.dtype, device=x.device)


@dataclass(frozen=True)
class ForwardBackward:
    """A forward and its gradients: 'output', 'x', 'context' (if any) and every parameter name."""
    tensors: dict


def _run_with_grads(mha, num_heads, inputs: Inputs, dtype, device) -> ForwardBackward:
    state = {k: v.to(device, dtype).requires_grad_(True) for k, v in inputs.state.items()}
    forward = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in inputs.forward.items()}
    for key in ("x", "context"):
        if forward[key] is not None:
            forward[key] = forward[key].to(dtype).requires_grad_(True)
    output = mha(state, num_heads, **forward)
    differentiable = {k: forward[k] for k in ("x", "context") if forward[k] is not None} | state
    grads = vector_jacobian([output], [inputs.grad_output], differentiable.values())
    tensors = {"output": output.detach().cpu()}
    tensors.update({name: g.detach().cpu() for name, g in zip(differentiable, grads, strict=True)})
    return ForwardBackward(tensors)


def golden_outcome(case: Case, inputs: Inputs) -> ForwardBackward:
    """float64 on the CPU, through the suite's oracle."""
    return _run_with_grads(oracle.mha, case.num_heads, inputs, torch.float64, "cpu")


def low_precision_outcome(case: Case, inputs: Inputs, device) -> ForwardBackward:
    return _run_with_grads(low_precision_mha, case.num_heads, inputs, inputs.dtype, device)


@dataclass(frozen=True)
class Target:
    golden: ForwardBackward
    tolerances: dict   # name -> Tolerance


def expected_for(case: Case, inputs: Inputs, device) -> Target:
    golden = golden_outcome(case, inputs)
    low = low_precision_outcome(case, inputs, device)
    tolerances = {name: derive_tolerance(golden.tensors[name], low.tensors[name],
                                         OUTPUT_FUDGE if name == "output" else GRAD_FUDGE)
                  for name in golden.tensors}
    return Target(golden, tolerances)


@functools.cache
def cached_expectation(case: Case, dtype: torch.dtype, device: str) -> tuple[Inputs, Target]:
    inputs = make_inputs(case, dtype)
    return inputs, expected_for(case, inputs, device)


# ---------------------------------------------------------------- running the student's module

def call_options(device: str, grad_output: torch.Tensor, backend: str | None) -> CallOptions:
    return CallOptions(device=device, grad_outputs=(grad_output,), sdpa_backend=backend)


def describe_case(case: Case, dtype: torch.dtype, fused: bool, backend: str | None, device: str) -> str:
    kind = "cross-attention" if case.keys is not None else "self-attention"
    masks = [m for m, on in (("padding mask", case.key_lengths), ("is_causal=True", case.is_causal)) if on]
    path = f"fused=True, SDPA backend {backend}" if backend else f"fused={fused}"
    return (f"MultiHeadAttention({case.embed_dim}, {case.num_heads}, {path}) on {device} in "
            f"{str(dtype).removeprefix('torch.')}, {kind} (B={case.batch}, L={case.queries}, S={case.key_count})"
            + (f" with {' and '.join(masks)}" if masks else ""))


def run_student(student, case: Case, inputs: Inputs, *, fused: bool, device: str, backend: str | None = None):
    spec = ModuleSpec(init_kwargs={"embed_dim": case.embed_dim, "num_heads": case.num_heads, "fused": fused},
                      state_dict=inputs.state, forward_kwargs=inputs.forward, dtype=inputs.dtype)
    return run_module(student, spec, call_options(device, inputs.grad_output, backend))


def check_agreement(result, case: Case, inputs: Inputs, expected: Target, what: str, *, fused: bool = False):
    """The student's output and every gradient within the derived tolerances of the float64 golden values; on the
    fused path, the output of the queries that see a key only (CASES says why)."""
    golden, tolerances = expected.golden.tensors, expected.tolerances
    if result.output is None:
        raise AssertionError(f"{what}: forward returned no output")
    if result.output.dtype != inputs.dtype:
        raise AssertionError(f"{what}: output has dtype {result.output.dtype}, expected {inputs.dtype} "
                             f"(keep the input dtype: no .float() casts)")
    hints = mha_hints(case, inputs)
    rows = seeing_rows(case) if fused else None
    if rows is None:
        _close(result.output, golden["output"], tolerances["output"], f"{what}: output", hints)
    else:
        expect_shape(result.output, golden["output"].shape, f"{what}: output")
        _close(result.output[rows], golden["output"][rows], tolerances["output"],
               f"{what}: output of the queries that see a key", [(text, functools.partial(_rows_of, make, rows))
                                                                 for text, make in hints])
    if case.forward_only:
        return
    grads = dict(result.input_grads or {}) | dict(result.param_grads or {})
    for name, expected_grad in golden.items():
        if name == "output":
            continue
        got = grads.get(name)
        if got is None:
            raise AssertionError(f"{what}: no gradient reached {name!r}: does the path detach or use no_grad?")
        _close(got, expected_grad, tolerances[name], f"{what}: gradient of {name!r}")


def seeing_rows(case: Case) -> torch.Tensor | None:
    """(B, L) bool: the queries of the case that see at least one key; None where every query does."""
    if case.key_lengths is None:
        return None
    L, S = case.queries, case.key_count
    visible = oracle.visible(oracle.expand(oracle.padding(case.key_lengths, S), L), case.is_causal, L, S)
    rows = visible.any(-1)[:, 0]
    return None if rows.all() else rows


def _rows_of(make, rows):
    made = make()
    return (made[0] if isinstance(made, tuple) else made)[rows]


def _close(got, golden, tolerance: Tolerance, what, hints=()):
    expect_close(got, golden, what, tolerance=tolerance, hints=hints)


def mha_hints(case: Case, inputs: Inputs):
    forward = inputs.forward
    return [(text, make) for text, make in oracle.mha_mistakes(
        inputs.state, case.num_heads, forward["x"], forward["context"], forward["padding_mask"], forward["is_causal"])]


# ---------------------------------------------------------------- which SDPA backends can run a case

# The forms of the SDPA call a correct fused path may make for one case (the handout allows each): the reference's
# (a bool mask only where there is padding, folded with the causal mask, is_causal otherwise), one bool mask always
# (the causal mask folded in), and that mask as an additive float mask (0 where a key is visible, -inf elsewhere).
SDPA_FORMS = ("reference", "bool mask always", "additive mask")


def sdpa_form(form: str, case: Case, dtype: torch.dtype, device: str) -> tuple[torch.Tensor | None, bool]:
    """(attn_mask, is_causal) that a correct fused path of this form hands to F.scaled_dot_product_attention."""
    L, S = case.queries, case.key_count
    padding = None if case.key_lengths is None else oracle.padding(case.key_lengths, S)
    if form == "reference":
        mask, is_causal = oracle.sdpa_arguments(padding, case.is_causal, L, S)
    else:
        expanded = None if padding is None else oracle.expand(padding, L)
        mask, is_causal = oracle.visible(expanded, case.is_causal, L, S), False
        if mask is not None and form == "additive mask":
            mask = torch.zeros(mask.shape, dtype=dtype).masked_fill(~mask, float("-inf"))
    return (None if mask is None else mask.to(device)), is_causal


def backend_problem(name: str, case: Case, dtype: torch.dtype, device: str, form: str = "reference") -> str | None:
    """Why this backend cannot run the SDPA call a fused path of this form makes for this case, or None if it can.

    Probes on the trusted side, forward and backward, with the inputs a correct fused path hands to
    F.scaled_dot_product_attention: heads (B, H, L, D) and the form's mask and is_causal (sdpa_form).
    """
    B, H, L, S = case.batch, case.num_heads, case.queries, case.key_count
    D = case.embed_dim // H
    q = torch.randn(B, H, L, D, device=device, dtype=dtype, requires_grad=True)
    k = torch.randn(B, H, S, D, device=device, dtype=dtype, requires_grad=True)
    v = torch.randn(B, H, S, D, device=device, dtype=dtype, requires_grad=True)
    mask, is_causal = sdpa_form(form, case, dtype, device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with restricting_sdpa(name):
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
                out.backward(torch.ones_like(out))
        except RuntimeError as error:
            reasons = "; ".join(str(w.message).strip().splitlines()[0] for w in caught)
            return f"{str(error).strip().splitlines()[0]}" + (f" ({reasons})" if reasons else "")
    return None


def form_problems(name: str, case: Case, dtype: torch.dtype, device: str) -> dict[str, str]:
    """The forms of a correct SDPA call (SDPA_FORMS) this backend cannot run for this case, each with why: where
    it runs the reference's but not all of them, a correct fused path can fail there for its form alone."""
    found = {form: backend_problem(name, case, dtype, device, form) for form in SDPA_FORMS}
    return {form: why for form, why in found.items() if why is not None}
