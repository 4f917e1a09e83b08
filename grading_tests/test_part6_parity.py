"""Part 6 on the CPU: MultiHeadAttention(fused=True) goes through torch's SDPA and agrees with the math.

The CUDA backends are graded in test_part6_cuda.py (skipped, worth 0, without a GPU).
"""
import pytest
import torch
import torch.nn.functional as F

from grading_tests import oracle
from grading_tests.checks import expect_close, expect_devices, fail, run_module
from grading_tests.gateway import CallOptions, ModuleSpec
from grading_tests.module_checks import (
    MODULE_CASES,
    case_inputs,
    check_dropout_rate,
    check_gradients,
    check_lesson,
    check_module,
    describe_forward,
)

pytestmark = pytest.mark.part(6)


@pytest.mark.parametrize("case", MODULE_CASES, ids=list(MODULE_CASES))
def test_fused_agrees_with_float64_math(student, case):
    check_module(student, *case_inputs(case, 800 + 10 * list(MODULE_CASES).index(case)), fused=True)


def test_lesson_through_the_fused_path(student):
    check_lesson(student, fused=True)


def torch_sdpa_module(state, num_heads, forward):
    """The module's forward with torch's own SDPA for the attention step (trusted side, float32)."""
    x = forward["x"]
    source = forward.get("context")
    source = x if source is None else source
    linear = lambda t, name: F.linear(t, state[f"{name}.weight"], state.get(f"{name}.bias"))
    q, k, v = (oracle.split(linear(t, n), num_heads) for t, n in ((x, "q_proj"), (source, "k_proj"), (source, "v_proj")))
    mask = forward.get("padding_mask")
    mask = None if mask is None else oracle.expand(mask, x.shape[1])
    if forward.get("is_causal"):
        mask = oracle.causal(x.shape[1], source.shape[1]) if mask is None else mask & oracle.causal(x.shape[1], source.shape[1])
    return linear(oracle.merge(F.scaled_dot_product_attention(q, k, v, attn_mask=mask)), "out_proj")


@pytest.mark.parametrize("case", ["self-causal-padding", "cross-padding", "long-odd"])
def test_fused_agrees_with_the_manual_path_and_torch_sdpa(student, case):
    init_kwargs, state, forward = case_inputs(case, 850 + len(case))
    fused = check_module(student, init_kwargs, state, forward, fused=True).output
    manual = check_module(student, init_kwargs, state, forward).output
    what = describe_forward(init_kwargs, forward, True)
    expect_close(fused, manual.double(), f"the output of {what} compared with fused=False")
    expect_close(fused, torch_sdpa_module(state, init_kwargs["num_heads"], forward).double(),
                 f"the output of {what} compared with torch's F.scaled_dot_product_attention")


@pytest.mark.weight(0)
def test_fused_path_not_calling_torch_sdpa_is_flagged_not_graded(student):
    """Worth no points: a fused path (fused=True) that never calls torch's scaled_dot_product_attention is
    flagged for the instructor; whether it does cannot be checked in a way the submission could not fool."""
    init_kwargs, state, forward = case_inputs("self-causal-padding", 870)
    check_module(student, init_kwargs, state, forward, fused=True, options=CallOptions(attention="fused"))


@pytest.mark.parametrize("case", ["self-causal-padding", "self-causal", "cross-padding"])
def test_fused_works_on_the_math_backend(student, case):
    """Not every SDPA backend accepts attn_mask together with is_causal=True (the math backend refuses)."""
    init_kwargs, state, forward = case_inputs(case, 880)
    try:
        check_module(student, init_kwargs, state, forward, fused=True, options=CallOptions(sdpa_backend="math"))
    except AssertionError as error:
        raise AssertionError(f"{error} (SDPA restricted to its math backend: not every backend accepts attn_mask "
                             f"together with is_causal=True; fold the causal mask into attn_mask)") from None


@pytest.mark.parametrize("case", ["self-causal-padding", "cross-padding"])
def test_fused_gradients_agree_with_float64_math(student, case):
    check_gradients(student, case, 890 + len(case), fused=True)


def test_fused_dropout_only_in_training_and_at_the_given_rate(student):
    check_dropout_rate(student, fused=True)


def test_fused_no_dropout_in_eval_mode(student):
    init_kwargs, state, forward = case_inputs("cross-padding", 900)
    check_module(student, {**init_kwargs, "dropout": 0.5}, state, forward, fused=True, options=CallOptions(seed=2))


def test_fused_sequence_with_no_real_token_gives_no_nan(student):
    init_kwargs, state, forward = case_inputs("self-causal-padding", 910)
    forward["padding_mask"] = oracle.padding([8, 0, 3], 8)
    check_module(student, init_kwargs, state, forward, fused=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fused_low_precision(student, dtype):
    init_kwargs, state, forward = case_inputs("self-causal-padding", 920, dtype=dtype)
    check_module(student, init_kwargs, state, forward, fused=True, dtype=dtype)


def test_fused_runs_on_the_inputs_device(student):
    for case in ("self-causal-padding", "cross-padding"):
        init_kwargs, state, forward = case_inputs(case, 930)
        result = check_module(student, init_kwargs, state, forward, fused=True, options=CallOptions(device="meta"))
        expect_devices(result, "meta", f"MultiHeadAttention(fused=True) ({case})")
        check_module(student, init_kwargs, state, forward, fused=True)


def test_fused_parameters_match_the_manual_module(student):
    built = run_module(student, ModuleSpec(init_kwargs={"embed_dim": 12, "num_heads": 3, "fused": True}))
    manual = run_module(student, ModuleSpec(init_kwargs={"embed_dim": 12, "num_heads": 3}))
    if built.parameters != manual.parameters:
        fail("fused=True must create the same four projections as fused=False, so their weights can be swapped")
    check_module(student, *case_inputs("self", 940), fused=True)
