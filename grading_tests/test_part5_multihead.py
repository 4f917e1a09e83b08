"""Part 5: MultiHeadAttention with fused=False: projections, self- and cross-attention, masks, dropout."""
import pytest
import torch

from grader.gateway import ModuleSpec, StudentError
from grading_tests.checks import expect_computed, expect_unmodified, fail, laid_out, randn, run_module
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
    expect_same_output,
    module_output,
    module_spec,
)
from grading_tests.second_opinions import Questions, second_opinion
from grading_tests.tolerance import agree

pytestmark = pytest.mark.part(5)


@pytest.mark.gated("MultiHeadAttention")
@pytest.mark.parametrize("bias", [True, False])
def test_parameters_are_exactly_the_four_projections(student, bias):
    E = 12
    built = run_module(student, ModuleSpec(init_kwargs={"embed_dim": E, "num_heads": 3, "bias": bias}))
    expected = {f"{p}_proj.{w}": (E, E) if w == "weight" else (E,)
                for p in ("q", "k", "v", "out") for w in (("weight", "bias") if bias else ("weight",))}
    if built.parameters != expected:
        missing = sorted(set(expected) - set(built.parameters))
        extra = sorted(set(built.parameters) - set(expected))
        wrong = sorted(n for n in set(expected) & set(built.parameters) if built.parameters[n] != expected[n])
        fail(f"MultiHeadAttention({E}, 3, bias={bias}) parameters differ from four nn.Linear({E}, {E}, bias={bias}) "
             f"named q_proj, k_proj, v_proj, out_proj: missing {missing}, unexpected {extra}, wrong shape {wrong}")


def raises_value_error(student, spec: ModuleSpec) -> StudentError | None:
    """The ValueError building (and running) spec raised, None when it raised no ValueError."""
    try:
        student.run_module(spec)
    except StudentError as error:
        return error if error.type_name == "ValueError" else None
    return None


@pytest.mark.gated("MultiHeadAttention")
def test_rejects_a_head_count_that_does_not_divide_the_width(student):
    try:
        student.run_module(ModuleSpec(init_kwargs={"embed_dim": 10, "num_heads": 3}))
    except StudentError as error:
        if error.type_name != "ValueError":
            fail(f"MultiHeadAttention(10, 3) raised {error.type_name} ({error.message}); expected ValueError")
    else:
        fail("MultiHeadAttention(10, 3) was created; expected ValueError: 10 features cannot make 3 equal heads")
    accepted = raises_value_error(student, ModuleSpec(init_kwargs={"embed_dim": 10, "num_heads": 5}))
    if accepted is not None:
        fail(f"MultiHeadAttention(10, 5) raised ValueError ({accepted.message}), but 5 heads divide 10 features")


def test_lesson_self_and_causal_attention(student):
    check_lesson(student, fused=False)


@pytest.mark.parametrize("case", MODULE_CASES, ids=list(MODULE_CASES))
def test_agrees_with_float64_math_on_random_inputs(student, case):
    check_module(student, *case_inputs(case, 510 + 10 * list(MODULE_CASES).index(case)))


def test_views_as_inputs_give_the_same_output(student):
    """x, context and padding_mask as the views real callers pass (sliced, transposed, permuted in memory)."""
    init_kwargs, state, forward = case_inputs("cross-padding", 695)
    x_views, context_views = laid_out(forward["x"]), laid_out(forward["context"])
    mask_views = laid_out(forward["padding_mask"])
    for name in x_views:
        mask = mask_views.get(name, mask_views["a sliced view"])
        check_module(student, init_kwargs, state, {**forward, "x": x_views[name], "context": context_views[name],
                                                   "padding_mask": mask})


@pytest.mark.parametrize("case", ["self-causal-padding", "cross-padding"])
def test_gradients_agree_with_float64_math(student, case):
    check_gradients(student, case, 600 + len(case), fused=False)


@pytest.mark.gated("MultiHeadAttention")
def test_causal_cross_attention_is_rejected(student):
    init_kwargs, state, forward = case_inputs("cross", 620)
    spec = ModuleSpec(init_kwargs=init_kwargs, state_dict=state, forward_kwargs={**forward, "is_causal": True})
    try:
        student.run_module(spec)
    except StudentError as error:
        if error.type_name != "ValueError":
            fail(f"forward(x, context=..., is_causal=True) raised {error.type_name} ({error.message}); "
                 f"expected ValueError: is_causal only makes sense for self-attention")
    else:
        fail("forward(x, context=..., is_causal=True) returned normally; expected ValueError: "
             "is_causal only makes sense for self-attention")
    accepted = raises_value_error(student, module_spec(init_kwargs, state, forward))
    if accepted is not None:
        fail(f"forward(x, context=...) without is_causal raised ValueError ({accepted.message}): only causal "
             f"cross-attention is rejected")


@pytest.mark.gated("MultiHeadAttention")
def test_dropout_only_in_training_and_at_the_given_rate(student):
    check_dropout_rate(student, fused=False)


# The tests below compare two answers; the second comes from a process that never saw the first's inputs
# (second_opinions.py), so an answer remembered from the first call cannot stand in for it.
@pytest.mark.gated("MultiHeadAttention")
@second_opinion(dropping_then_not, False, 630)
def test_no_dropout_in_eval_mode(opinions):
    expect_no_dropout_in_eval_mode(opinions)


def trained_then_evaluated():
    init_kwargs, state, forward = case_inputs("cross-padding", 640)
    return Questions(lambda student: module_output(student, init_kwargs, state, forward, training=True),
                lambda student: module_output(student, init_kwargs, state, forward),
                context=describe_forward(init_kwargs, forward, False, True))


@pytest.mark.gated("MultiHeadAttention")
@second_opinion(trained_then_evaluated)
def test_training_mode_without_dropout_changes_nothing(opinions):
    expect_same_output(opinions.first, opinions.second, f"the output of {opinions.context}",
                       "the same call in eval mode: with dropout=0.0 the mode changes nothing")


PADDING_LENGTHS = [7, 3, 5]


def padded_tokens_changed():
    init_kwargs, state, forward = case_inputs("self-padding", 650)
    changed = forward["x"].clone()
    for b, n in enumerate(PADDING_LENGTHS):
        changed[b, n:] = randn(7 - n, 12, seed=651 + b, scale=5.0)
    return Questions(lambda student: module_output(student, init_kwargs, state, forward),
                lambda student: module_output(student, init_kwargs, state, {**forward, "x": changed}))


@pytest.mark.gated("MultiHeadAttention")
@second_opinion(padded_tokens_changed)
def test_padded_tokens_do_not_change_real_outputs(opinions):
    for b, n in enumerate(PADDING_LENGTHS):
        if not agree(opinions.first[b, :n], opinions.second[b, :n], atol=1e-5):
            fail(f"changing the padded tokens of sequence {b} changed the outputs of its real tokens: "
                 f"padded keys must get zero attention")


def future_tokens_changed():
    init_kwargs, state, forward = case_inputs("self-causal", 660)
    changed = forward["x"].clone()
    changed[:, 3:] += 4.0
    return Questions(lambda student: module_output(student, init_kwargs, state, forward),
                lambda student: module_output(student, init_kwargs, state, {**forward, "x": changed}))


@pytest.mark.gated("MultiHeadAttention")
@second_opinion(future_tokens_changed)
def test_future_tokens_do_not_change_past_outputs(opinions):
    if not agree(opinions.first[:, :3], opinions.second[:, :3], atol=1e-5):
        fail("with is_causal=True, changing tokens 3.. changed the outputs of tokens 0..2")


PERMUTATION = torch.tensor([4, 2, 0, 3, 1])


def tokens_permuted():
    init_kwargs, state, forward = case_inputs("self", 670)
    return Questions(lambda student: module_output(student, init_kwargs, state, forward),
                lambda student: module_output(student, init_kwargs, state, {"x": forward["x"][:, PERMUTATION]}))


@pytest.mark.gated("MultiHeadAttention")
@second_opinion(tokens_permuted)
def test_self_attention_is_permutation_equivariant(opinions):
    if not agree(opinions.first[:, PERMUTATION], opinions.second, atol=1e-5):
        fail("without masks, permuting the input tokens must permute the outputs the same way")


def test_a_sequence_with_no_real_token_gets_no_attention(student):
    check_empty_sequence(student, "cross-padding", 680, [9, 0, 4], fused=False)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_module(student, dtype):
    init_kwargs, state, forward = case_inputs("self-causal-padding", 690, dtype=dtype)
    check_module(student, init_kwargs, state, forward, dtype=dtype)


@pytest.mark.gated("MultiHeadAttention")
def test_runs_on_the_inputs_device(student, second_device):
    check_placement(second_device, student, 700, fused=False)


@pytest.mark.gated("MultiHeadAttention")
@pytest.mark.parametrize("case", ["cross-padding", "self-padding"])
def test_inputs_are_not_modified(student, case):
    init_kwargs, state, forward = case_inputs(case, 710)
    result = run_module(student, module_spec(init_kwargs, state, forward))
    expect_computed(result.output, forward["x"].shape, f"the output of {describe_forward(init_kwargs, forward, False)}")
    expect_unmodified(result, "MultiHeadAttention.forward")
