"""Part 6 on the CPU: MultiHeadAttention(fused=True) goes through torch's SDPA and agrees with the math.

The CUDA backends are graded in test_part6_cuda.py (skipped, worth 0, without a GPU).
"""
import pytest
import torch

from grader.gateway import CallOptions, ModuleSpec
from grading_tests import oracle
from grading_tests.checks import expect_close, fail, randn, run_module
from grading_tests.module_checks import (
    MODULE_CASES,
    case_inputs,
    check_dropout_rate,
    check_empty_sequence,
    check_gradients,
    check_lesson,
    check_module,
    check_placement,
    describe_forward,
    dropping_then_not,
    expect_no_dropout_in_eval_mode,
    module_output,
)
from grading_tests.second_opinions import second_opinion

pytestmark = pytest.mark.part(6)


@pytest.mark.parametrize("case", MODULE_CASES, ids=list(MODULE_CASES))
def test_fused_agrees_with_float64_math(student, case):
    check_module(student, *case_inputs(case, 800 + 10 * list(MODULE_CASES).index(case)), fused=True)


def test_lesson_through_the_fused_path(student):
    check_lesson(student, fused=True)


@pytest.mark.parametrize("case", ["self-causal-padding", "cross-padding", "long-odd"])
def test_fused_agrees_with_the_manual_path_and_torch_sdpa(student, case):
    init_kwargs, state, forward = case_inputs(case, 850 + len(case))
    fused = module_output(student, init_kwargs, state, forward, fused=True)
    manual = module_output(student, init_kwargs, state, forward)
    what = describe_forward(init_kwargs, forward, True)
    expect_close(fused, manual.double(), f"the output of {what} compared with fused=False")
    with_torch_sdpa = oracle.mha(state, init_kwargs["num_heads"], forward["x"], forward.get("context"),
                                 forward.get("padding_mask"), forward.get("is_causal", False),
                                 dtype=torch.float32, attend=oracle.sdpa_step)
    expect_close(fused, with_torch_sdpa.double(),
                 f"the output of {what} compared with torch's F.scaled_dot_product_attention")


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


@pytest.mark.gated("MultiHeadAttention(fused=True)")
def test_fused_dropout_only_in_training_and_at_the_given_rate(student):
    check_dropout_rate(student, fused=True)


@pytest.mark.gated("MultiHeadAttention(fused=True)")
@second_opinion(dropping_then_not, True, 900)
def test_fused_no_dropout_in_eval_mode(opinions):   # the second answer from a new process (second_opinions.py)
    expect_no_dropout_in_eval_mode(opinions)


@pytest.mark.parametrize("backend", [None, "math"], ids=["any-backend", "math-backend"])
def test_fused_attention_step_alone_with_more_keys_than_queries(student, backend):
    """_fused_attention on its own, as its docstring allows: is_causal over L != S keys (aligned to the top-left
    corner, as SDPA's) together with a key mask, which the math backend refuses to take with is_causal."""
    q, k, v = randn(2, 2, 3, 4, seed=930), randn(2, 2, 5, 4, seed=931), randn(2, 2, 5, 4, seed=932)
    keys = torch.tensor([[True, True, False, True, False], [True, False, True, True, True]])
    mask = keys[:, None, None, :].expand(2, 1, 3, 5).clone()   # key 0 is real: no query is left without a key
    arguments = {"q": q, "k": k, "v": v, "mask": mask, "is_causal": True, "dropout_p": 0.0}
    spec = ModuleSpec(init_kwargs={"embed_dim": 8, "num_heads": 2, "fused": True}, forward_kwargs=arguments,
                      method="_fused_attention")
    got = run_module(student, spec, CallOptions(sdpa_backend=backend)).output
    expected, _ = oracle.attention(q, k, v, mask, True)
    expect_close(got, expected, "_fused_attention(q (2, 2, 3, 4), k and v (2, 2, 5, 4), mask (2, 1, 3, 5), "
                                "is_causal=True, dropout_p=0.0)" + (" on the math backend" if backend else ""))


def test_fused_sequence_with_no_real_token_gets_no_attention(student):
    check_empty_sequence(student, "self-causal-padding", 910, [8, 0, 3], fused=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fused_low_precision(student, dtype):
    init_kwargs, state, forward = case_inputs("self-causal-padding", 920, dtype=dtype)
    check_module(student, init_kwargs, state, forward, fused=True, dtype=dtype)


@pytest.mark.gated("MultiHeadAttention(fused=True)")
def test_fused_runs_on_the_inputs_device(student, second_device):
    check_placement(second_device, student, 930, fused=True)


@pytest.mark.gated("MultiHeadAttention(fused=True)")
def test_fused_parameters_match_the_manual_module(student):
    built = run_module(student, ModuleSpec(init_kwargs={"embed_dim": 12, "num_heads": 3, "fused": True}))
    manual = run_module(student, ModuleSpec(init_kwargs={"embed_dim": 12, "num_heads": 3}))
    if built.parameters != manual.parameters:
        fail("fused=True must create the same four projections as fused=False, so their weights can be swapped")
