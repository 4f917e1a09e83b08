"""Each hidden test fails only for the property its name states (issue 15).

Every row runs one hidden test function in this process (LocalGateway) against one submission:
the reshaped tests pass correct-but-different code, or code wrong only in another property, that
they used to fail, and still fail the bug they are for. Device tests that cannot decide on the
meta device (the code reads values) are skipped, never failed, and still fail misplaced tensors.
"""
import sys
import warnings

import pytest
import torch

from autograder.gateway import LocalGateway, StudentError
from autograder.samples import edited_reference, write_submission
from autograder.zoo.bugs import BUGS
from autograder.zoo.variants import VARIANTS
from grading_tests.placement import meta_may_explain

ZOO = {sample.name: sample.overrides for sample in BUGS + VARIANTS}
# Mistakes written here to show what a reshaped test still catches.
EXTRA = {
    "padding-positions-on-default-device": edited_reference(
        "masking.py", "positions = torch.arange(max_len, device=device)", "positions = torch.arange(max_len)"),
    "module-rejects-every-head-count": edited_reference(
        "multihead.py", "        if embed_dim % num_heads != 0:\n", "        if True:\n"),
    "dropout-in-training-even-at-zero": edited_reference(
        "multihead.py", "        dropout_p = self.dropout if self.training else 0.0",
        "        dropout_p = max(self.dropout, 0.2) if self.training else 0.0"),
    "dropout-at-p-zero": edited_reference(
        "masking.py", "    if dropout_p > 0.0:\n", "    if True:\n        dropout_p = max(dropout_p, 0.1)\n"),
    # A stand-in of the right shape, dtype and device that computes nothing.
    "split-returns-zeros": edited_reference(
        "heads.py", "    return x.reshape(B, L, num_heads, E // num_heads).transpose(1, 2)",
        "    return torch.zeros(B, num_heads, L, E // num_heads, dtype=x.dtype, device=x.device)"),
}

PASS, FAIL, SKIP = "passes", "fails", "is inconclusive"
# (hidden test module, test function, its parameters, submission, expected outcome)
CASES = [
    # Device tests: value-reading code is inconclusive on the meta device; misplaced tensors still fail.
    ("test_part2_masking", "test_padding_mask_on_the_lengths_device", {}, "padding-mask-from-python-ints", SKIP),
    ("test_part2_masking", "test_padding_mask_on_the_lengths_device", {}, "padding-mask-filled-with-item", SKIP),
    ("test_part2_masking", "test_padding_mask_on_the_requested_device", {}, "padding-mask-from-python-ints", PASS),
    ("test_part2_masking", "test_padding_mask_on_the_lengths_device", {}, "padding-positions-on-default-device", FAIL),
    ("test_part2_masking", "test_causal_mask_on_the_requested_device", {}, "causal-mask-on-default-device", FAIL),
    ("test_part5_multihead", "test_runs_on_the_inputs_device", {}, "all-ones-mask-shortcut", SKIP),
    ("test_part6_parity", "test_fused_runs_on_the_inputs_device", {}, "all-ones-mask-shortcut", SKIP),
    ("test_part6_parity", "test_fused_runs_on_the_inputs_device", {}, "fused-causal-mask-on-default-device", FAIL),
    # A fused path that passes attn_mask with is_causal: the meta device takes a backend that refuses it,
    # the CPU's default backend does not, so placement cannot be decided; the math-backend test fails it.
    ("test_part6_parity", "test_fused_runs_on_the_inputs_device", {}, "fused-mask-and-is-causal-together", SKIP),
    ("test_part6_parity", "test_fused_works_on_the_math_backend", {"case": "self-causal-padding"},
     "fused-mask-and-is-causal-together", FAIL),
    # A NaN row fails the tests about empty rows only, not the device, dtype and value tests around them.
    ("test_part2_masking", "test_runs_on_the_inputs_device", {}, "nan-on-fully-masked-rows", PASS),
    ("test_part2_masking", "test_low_precision_inputs_with_masks", {"dtype": torch.float16}, "nan-on-fully-masked-rows",
     PASS),
    ("test_part2_masking", "test_gradients_agree_with_float64_math", {"is_causal": True, "with_mask": True},
     "nan-on-fully-masked-rows", PASS),
    ("test_part2_masking", "test_fully_masked_rows_give_zeros_not_nan", {}, "nan-on-fully-masked-rows", FAIL),
    # Mutation tests look at mutation only.
    ("test_part2_masking", "test_inputs_are_not_modified", {}, "nan-on-fully-masked-rows", PASS),
    ("test_part2_masking", "test_apply_mask_does_not_modify_its_inputs", {}, "apply-mask-inverted", PASS),
    ("test_part2_masking", "test_apply_mask_does_not_modify_its_inputs", {}, "apply-mask-in-place", FAIL),
    ("test_part1_scaling", "test_inputs_are_not_modified", {}, "no-scale", PASS),
    ("test_part1_scaling", "test_inputs_are_not_modified", {}, "scales-q-in-place", FAIL),
    # Dropout tests judge dropout against the submission's own weights, not the oracle's.
    ("test_part2_masking", "test_dropout_zeroes_weights_at_the_given_rate_and_rescales", {}, "no-scale", PASS),
    ("test_part2_masking", "test_dropout_zeroes_weights_at_the_given_rate_and_rescales", {},
     "dropout-without-rescale", FAIL),
    ("test_part2_masking", "test_no_dropout_when_dropout_p_is_zero", {}, "no-scale", PASS),
    ("test_part2_masking", "test_no_dropout_when_dropout_p_is_zero", {}, "dropout-at-p-zero", FAIL),
    ("test_part5_multihead", "test_dropout_only_in_training_and_at_the_given_rate", {}, "bias-argument-ignored", PASS),
    ("test_part5_multihead", "test_dropout_only_in_training_and_at_the_given_rate", {}, "dropout-in-eval", FAIL),
    ("test_part5_multihead", "test_no_dropout_in_eval_mode", {}, "scale-by-model-dim", PASS),
    ("test_part5_multihead", "test_no_dropout_in_eval_mode", {}, "dropout-in-eval", FAIL),
    ("test_part5_multihead", "test_training_mode_without_dropout_changes_nothing", {}, "bias-argument-ignored", PASS),
    ("test_part5_multihead", "test_training_mode_without_dropout_changes_nothing", {},
     "dropout-in-training-even-at-zero", FAIL),
    # Rejection tests check the ValueError (and that a valid call is not rejected), not the values.
    ("test_part5_multihead", "test_rejects_a_head_count_that_does_not_divide_the_width", {}, "scale-by-model-dim",
     PASS),
    ("test_part5_multihead", "test_rejects_a_head_count_that_does_not_divide_the_width", {}, "bias-argument-ignored",
     PASS),
    ("test_part5_multihead", "test_rejects_a_head_count_that_does_not_divide_the_width", {},
     "no-value-error-for-heads", FAIL),
    ("test_part5_multihead", "test_rejects_a_head_count_that_does_not_divide_the_width", {},
     "module-rejects-every-head-count", FAIL),
    ("test_part5_multihead", "test_causal_cross_attention_is_rejected", {}, "scale-by-model-dim", PASS),
    ("test_part5_multihead", "test_causal_cross_attention_is_rejected", {}, "causal-cross-attention-accepted", FAIL),
    ("test_part3_heads", "test_split_rejects_a_head_count_that_does_not_divide_the_width", {},
     "split-vague-value-error", PASS),
    ("test_part3_heads", "test_split_error_message_names_the_width_and_the_head_count", {}, "split-vague-value-error",
     FAIL),
    ("test_part3_heads", "test_split_rejects_a_head_count_that_does_not_divide_the_width", {}, "split-no-value-error",
     FAIL),
    # The parameters test checks names and shapes, not outputs; one dropped bias costs the bias tests only.
    ("test_part5_multihead", "test_parameters_are_exactly_the_four_projections", {"bias": True}, "scale-by-model-dim",
     PASS),
    ("test_part5_multihead", "test_parameters_are_exactly_the_four_projections", {"bias": False},
     "bias-argument-ignored", FAIL),
    ("test_part5_multihead", "test_a_sequence_with_no_real_token_gives_no_nan", {}, "bias-argument-ignored", PASS),
    ("test_part5_multihead", "test_inputs_are_not_modified", {}, "bias-argument-ignored", PASS),
    ("test_part5_multihead", "test_agrees_with_float64_math_on_random_inputs", {"case": "no-bias"},
     "bias-argument-ignored", FAIL),
    # The SDPA-acceptance test of Part 4 checks the shape SDPA takes, not the values.
    ("test_part4_padding", "test_torch_sdpa_accepts_the_expanded_mask_for_any_head_count", {}, "expand-inverted", PASS),
    ("test_part4_padding", "test_torch_sdpa_accepts_the_expanded_mask_for_any_head_count", {}, "expand-transposed",
     FAIL),
    # E = 1 could not tell scaled from unscaled; every E left can.
    ("test_part1_scaling", "test_default_scale_uses_the_feature_size", {"E": 2}, "no-scale", FAIL),
    ("test_part1_scaling", "test_default_scale_uses_the_feature_size", {"E": 2}, "reference", PASS),
    # A property is examined on a computed result only: a constant stand-in earns nothing.
    ("test_part3_heads", "test_keeps_the_dtype", {"dtype": torch.float16}, "split-returns-zeros", FAIL),
    ("test_part3_heads", "test_runs_on_the_inputs_device", {}, "split-returns-zeros", FAIL),
    ("test_part3_heads", "test_inputs_are_not_modified", {}, "split-returns-zeros", FAIL),
    ("test_part3_heads", "test_keeps_the_dtype", {"dtype": torch.float16}, "split-interleaved", PASS),
    # float64 computed in float32: the failure says so.
    ("test_part2_masking", "test_float64_inputs_stay_float64", {}, "float32-softmax-for-half-precision", PASS),
    ("test_part2_masking", "test_float64_inputs_stay_float64", {}, "float32-softmax-cast-back", FAIL),
]


@pytest.fixture(scope="module")
def gateways(tmp_path_factory):
    """submission name -> LocalGateway; sys.path and the imported `student` are restored afterwards."""
    saved_path = list(sys.path)
    saved = {n: m for n, m in sys.modules.items() if n == "student" or n.startswith("student.")}
    root = tmp_path_factory.mktemp("fair")
    names = {case[3] for case in CASES}
    overrides = {"reference": {}} | ZOO | EXTRA
    made = {name: LocalGateway(write_submission(root / name, overrides=overrides[name])) for name in sorted(names)}
    yield made
    sys.path[:] = saved_path
    for name in [n for n in sys.modules if n == "student" or n.startswith("student.")]:
        del sys.modules[name]
    sys.modules.update(saved)


def hidden(module: str):
    with warnings.catch_warnings():   # part/weight markers are registered by grading_tests/conftest.py only
        warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
        return __import__(f"grading_tests.{module}", fromlist=["_"])


def outcome(test, student, params) -> tuple[str, str]:
    try:
        test(student, **params)
    except pytest.skip.Exception as skipped:
        return SKIP, str(skipped)
    except AssertionError as failure:
        return FAIL, str(failure)
    return PASS, ""


@pytest.mark.parametrize("module, test, params, submission, expected", CASES,
                         ids=[f"{c[1]}{list(c[2].values()) or ''}-{c[3]}-{c[4].split()[-1]}" for c in CASES])
def test_a_hidden_test_judges_only_its_own_property(gateways, module, test, params, submission, expected):
    got, message = outcome(getattr(hidden(module), test), gateways[submission], params)
    assert got == expected, f"{test}{params} {got} for {submission}, expected it {expected}: {message[:600]}"


def test_an_inconclusive_device_check_says_why_and_that_it_is_worth_nothing(gateways):
    _, message = outcome(hidden("test_part2_masking").test_padding_mask_on_the_lengths_device,
                         gateways["padding-mask-from-python-ints"], {})
    assert "meta device" in message and "reads tensor values" in message and "worth nothing" in message


def test_a_misplaced_tensor_is_named_in_the_failure(gateways):
    _, message = outcome(hidden("test_part2_masking").test_padding_mask_on_the_lengths_device,
                         gateways["padding-positions-on-default-device"], {})
    assert "create every tensor on the inputs' device" in message


def test_a_float64_result_computed_in_float32_gets_the_precision_hint(gateways):
    _, message = outcome(hidden("test_part2_masking").test_float64_inputs_stay_float64,
                         gateways["float32-softmax-cast-back"], {})
    assert "size of float32 rounding" in message and "atol=1e-09, rtol=1e-07" in message


@pytest.mark.parametrize("error, inconclusive", [
    (StudentError("RuntimeError", "Tensor.item() cannot be called on meta tensors"), True),
    (StudentError("NotImplementedError", "Cannot copy out of meta tensor; no data!"), True),
    (StudentError("RuntimeError", "Explicit attn_mask should not be set when is_causal=True"), True),
    (StudentError("RuntimeError", "Tensor on device meta is not on the expected device cpu!"), False),
    # Raised by the grader, not by the student's code: never an excuse (a forged device claim).
    (StudentError("ProtocolError", "the answer of causal_mask was refused: a result reported on meta arrived as "
                                   "a cpu tensor"), False),
    (StudentError("Timeout", "causal_mask did not finish within 10 s on meta"), False),
])
def test_only_the_students_own_errors_off_the_cpu_can_make_a_device_check_inconclusive(error, inconclusive):
    """(and only when the same call then runs on the CPU: see the CASES above)"""
    assert meta_may_explain(error) is inconclusive
