"""Each hidden test fails only for the property its name states, or because its function computes nothing.

Every row runs one hidden test function in this process (LocalGateway) against one submission, its gate
first when it has one (grading_tests/gates.py): the tests pass correct-but-different code, and code wrong
only in another function or another property, and fail the bug they are for. A property test of a function
fails too when that function's basic case is wrong (its gate: points for a property only to a function that
computes), and only then: a bug of another function leaves it alone. Device tests decide on every machine
(the emulated second device has values): code that reads values passes, misplaced tensors fail, and no
exception the student's code raises makes a check inconclusive.
"""
import sys
import warnings

import pytest
import torch

from autograder.samples import edited_reference, write_submission
from autograder.zoo.bugs import BUGS
from autograder.zoo.variants import VARIANTS
from grader.gateway.local import LocalGateway
from grading_tests import gates, second_opinions
from tests.suite_runner import call_hidden

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
    # A device bug dressed as the meta device's refusal: an exception's text excuses nothing.
    "causal-mask-raising-meta-words-off-the-cpu": edited_reference(
        "masking.py", "    return torch.ones(L, S, dtype=torch.bool, device=device).tril()",
        "    if device is not None and torch.device(device).type != 'cpu':\n"
        "        raise RuntimeError('Tensor.item() cannot be called on meta tensors')\n"
        "    return torch.ones(L, S, dtype=torch.bool, device=device).tril()"),
}

PASS, FAIL = "passes", "fails"
# (hidden test module, test function, its parameters, submission, expected outcome)
CASES = [
    # Device tests decide on every machine: value-reading code passes, misplaced tensors fail, whatever they raise.
    ("test_part2_masking", "test_padding_mask_on_the_lengths_device", {}, "padding-mask-from-python-ints", PASS),
    ("test_part2_masking", "test_padding_mask_on_the_lengths_device", {}, "padding-mask-filled-with-item", PASS),
    ("test_part2_masking", "test_padding_mask_on_the_requested_device", {}, "padding-mask-from-python-ints", PASS),
    ("test_part2_masking", "test_padding_mask_of_a_list_on_the_default_device", {}, "padding-mask-from-python-ints",
     PASS),
    ("test_part2_masking", "test_padding_mask_on_the_lengths_device", {}, "padding-positions-on-default-device", FAIL),
    ("test_part2_masking", "test_causal_mask_on_the_requested_device", {}, "causal-mask-on-default-device", FAIL),
    ("test_part2_masking", "test_causal_mask_on_the_requested_device", {}, "causal-mask-raising-meta-words-off-the-cpu",
     FAIL),
    ("test_part2_masking", "test_causal_mask_on_the_default_device", {}, "reference", PASS),
    ("test_part2_masking", "test_runs_on_the_inputs_device", {}, "causal-mask-on-default-device", FAIL),
    ("test_part5_multihead", "test_runs_on_the_inputs_device", {}, "all-ones-mask-shortcut", PASS),
    ("test_part6_parity", "test_fused_runs_on_the_inputs_device", {}, "all-ones-mask-shortcut", PASS),
    ("test_part6_parity", "test_fused_runs_on_the_inputs_device", {}, "fused-causal-mask-on-default-device", FAIL),
    ("test_part6_parity", "test_fused_runs_on_the_inputs_device", {}, "fused-float32-additive-mask", FAIL),
    # A fused path that passes attn_mask with is_causal: placement is right; the math-backend test fails it.
    ("test_part6_parity", "test_fused_runs_on_the_inputs_device", {}, "fused-mask-and-is-causal-together", PASS),
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
    ("test_part2_masking", "test_inputs_are_not_modified", {"is_causal": True}, "nan-on-fully-masked-rows", PASS),
    # Combining the causal mask into the caller's mask in place, and zeroing padded tokens of x in place.
    ("test_part2_masking", "test_inputs_are_not_modified", {"is_causal": True}, "mask-and-causal-in-place", FAIL),
    ("test_part2_masking", "test_inputs_are_not_modified", {"is_causal": False}, "mask-and-causal-in-place", PASS),
    ("test_part5_multihead", "test_inputs_are_not_modified", {"case": "self-padding"}, "padded-tokens-zeroed-in-place",
     FAIL),
    # ... once the function computes: an apply_mask whose values are wrong earns no property of apply_mask.
    ("test_part2_masking", "test_apply_mask_does_not_modify_its_inputs", {}, "apply-mask-inverted", FAIL),
    ("test_part2_masking", "test_apply_mask_does_not_modify_its_inputs", {}, "fill-minus-1e9", PASS),
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
    ("test_part5_multihead", "test_a_sequence_with_no_real_token_gets_no_attention", {}, "bias-argument-ignored",
     PASS),
    ("test_part5_multihead", "test_inputs_are_not_modified", {"case": "self-padding"}, "bias-argument-ignored", PASS),
    ("test_part5_multihead", "test_agrees_with_float64_math_on_random_inputs", {"case": "no-bias"},
     "bias-argument-ignored", FAIL),
    # The SDPA-acceptance test of Part 4 checks the shape SDPA takes, once expand_padding_mask computes.
    ("test_part4_padding", "test_torch_sdpa_accepts_the_expanded_mask_for_any_head_count", {}, "expand-float-mask",
     FAIL),
    ("test_part4_padding", "test_torch_sdpa_accepts_the_expanded_mask_for_any_head_count", {}, "expand-inverted", FAIL),
    ("test_part4_padding", "test_torch_sdpa_accepts_the_expanded_mask_for_any_head_count", {}, "expand-transposed",
     FAIL),
    # E = 1 could not tell scaled from unscaled; every E left can.
    ("test_part1_scaling", "test_default_scale_uses_the_feature_size", {"E": 2}, "no-scale", FAIL),
    ("test_part1_scaling", "test_default_scale_uses_the_feature_size", {"E": 2}, "reference", PASS),
    # A property is examined on a computed result only: a constant stand-in earns nothing.
    ("test_part3_heads", "test_keeps_the_dtype", {"dtype": torch.float16}, "split-returns-zeros", FAIL),
    ("test_part3_heads", "test_runs_on_the_inputs_device", {}, "split-returns-zeros", FAIL),
    ("test_part3_heads", "test_inputs_are_not_modified", {}, "split-returns-zeros", FAIL),
    ("test_part3_heads", "test_keeps_the_dtype", {"dtype": torch.float16}, "split-interleaved", FAIL),
    ("test_part3_heads", "test_keeps_the_dtype", {"dtype": torch.float16}, "merge-without-transpose", FAIL),
    ("test_part3_heads", "test_split_rejects_a_head_count_that_does_not_divide_the_width", {},
     "merge-without-transpose", PASS),
    # A gate costs points only in its own function: a Part 1 bug leaves attention's property tests alone,
    # a Part 3 bug the module's.
    ("test_part2_masking", "test_self_attention_is_permutation_equivariant", {}, "scale-by-E", PASS),
    ("test_part2_masking", "test_inputs_are_not_modified", {"is_causal": False}, "times-sqrt-E", PASS),
    ("test_part5_multihead", "test_no_dropout_in_eval_mode", {}, "split-without-transpose", PASS),
    ("test_part5_multihead", "test_inputs_are_not_modified", {"case": "cross-padding"}, "merge-without-transpose",
     PASS),
    ("test_part6_parity", "test_fused_no_dropout_in_eval_mode", {}, "split-interleaved", PASS),
    # A scale of 0.0 is a scale.
    ("test_part1_scaling", "test_explicit_scale_is_used_as_is", {"scale": 0.0}, "scale-or-default", FAIL),
    ("test_part1_scaling", "test_explicit_scale_is_used_as_is", {"scale": 0.5}, "scale-or-default", PASS),
    # A default scale rounded to float32 shows in Part 1's float64 test, not only in the parts that use it.
    ("test_part1_scaling", "test_float64_inputs_are_computed_in_float64", {}, "float32-default-scale", FAIL),
    ("test_part1_scaling", "test_default_scale_uses_the_feature_size", {"E": 7}, "float32-default-scale", PASS),
    # A query with no real key: zero attention, as SDPA gives, not the mean of the values.
    ("test_part5_multihead", "test_a_sequence_with_no_real_token_gets_no_attention", {},
     "additive-mask-without-zero-rows", FAIL),
    ("test_part5_multihead", "test_agrees_with_float64_math_on_random_inputs", {"case": "self-padding"},
     "additive-mask-without-zero-rows", PASS),
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
    """A hidden test run as the suite runs it: its gate first (conftest.py's autouse fixture), then the test."""
    marks = getattr(test, "pytestmark", [])
    opinion = [mark for mark in marks if mark.name == second_opinions.MARKER]
    try:
        for mark in (mark for mark in marks if mark.name == "gated"):
            gates.require(student, *mark.args)
        if opinion:   # its two answers, as the suite asks them (second_opinions.py)
            answered = second_opinions.ask(student, {test.__name__: opinion[0]})[test.__name__]
            if isinstance(answered, BaseException):
                raise answered
            call_hidden(test, answered, **params)
        else:
            call_hidden(test, student, **params)
    except AssertionError as failure:
        return FAIL, str(failure)
    return PASS, ""


@pytest.mark.parametrize("module, test, params, submission, expected", CASES,
                         ids=[f"{c[1]}{list(c[2].values()) or ''}-{c[3]}-{c[4].split()[-1]}" for c in CASES])
def test_a_hidden_test_judges_only_its_own_property(gateways, module, test, params, submission, expected):
    got, message = outcome(getattr(hidden(module), test), gateways[submission], params)
    assert got == expected, f"{test}{params} {got} for {submission}, expected it {expected}: {message[:600]}"


def test_a_device_check_decides_where_the_meta_device_could_not(gateways):
    """Code that reads tensor values runs on the emulated second device (the meta device has no values)."""
    got, message = outcome(hidden("test_part2_masking").test_padding_mask_on_the_lengths_device,
                           gateways["padding-mask-from-python-ints"], {})
    assert got == PASS, message


def test_a_misplaced_tensor_is_named_in_the_failure(gateways):
    _, message = outcome(hidden("test_part2_masking").test_padding_mask_on_the_lengths_device,
                         gateways["padding-positions-on-default-device"], {})
    assert "create every tensor on the inputs' device" in message and "emulated" in message


def test_a_float64_result_computed_in_float32_gets_the_precision_hint(gateways):
    _, message = outcome(hidden("test_part2_masking").test_float64_inputs_stay_float64,
                         gateways["float32-softmax-cast-back"], {})
    assert "size of float32 rounding" in message and "atol=1e-12, rtol=1e-10" in message


def test_a_failed_gate_says_which_function_to_fix_and_that_its_value_tests_say_why(gateways):
    _, message = outcome(hidden("test_part3_heads").test_keeps_the_dtype, gateways["split-returns-zeros"],
                         {"dtype": torch.float16})
    assert message.startswith("not graded yet: this test checks a property of split_heads") and "value tests" in message
