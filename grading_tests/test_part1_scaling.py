"""Part 1: scaled_scores(q, k, scale=None) = q @ k^T * scale, scale None meaning 1/sqrt(E)."""
import math

import pytest
import torch

from grader.gateway import CallOptions
from grading_tests import oracle
from grading_tests.checks import (
    call,
    expect_close,
    expect_dtype,
    expect_result,
    expect_shape,
    expect_unmodified,
    fail,
    in_a_batch,
    laid_out,
    randn,
)
from grading_tests.placement import call_placed

pytestmark = pytest.mark.part(1)


def score_hints(q, k, scale):
    return [(text, lambda fn=fn: fn(q, k, scale)) for text, fn in oracle.SCORE_MISTAKES.values()]


def check_scores(student, q, k, scale=None, what=None):
    """One call, checked for shape, dtype and values; returns the CallResult."""
    kwargs = {} if scale is None else {"scale": scale}
    result = call(student.scaled_scores, q, k, **kwargs)
    shown_scale = "" if scale is None else f", scale={scale}"
    what = what or f"scaled_scores(q {tuple(q.shape)}, k {tuple(k.shape)}{shown_scale})"
    expected = oracle.scores(q, k, scale)
    expect_shape(result.value, expected.shape, what)
    expect_dtype(result.value, q.dtype, what)
    expect_close(result.value, expected, what, hints=score_hints(q, k, scale))
    return result


def test_lesson_two_keys_eight_features(student):
    # One query of ones against keys of twos and ones: 16/sqrt(8) = 5.6569 and 8/sqrt(8) = 2.8284.
    q, k = in_a_batch(torch.ones(1, 8), seed=1), in_a_batch(torch.stack([2 * torch.ones(8), torch.ones(8)]), seed=2)
    result = check_scores(student, q, k, what="scaled_scores of the lesson's 8-feature example, in a batch")
    expect_close(result.value[0], torch.tensor([[5.6569, 2.8284]], dtype=torch.float64), "scaled scores",
                 atol=1e-4, rtol=0)


def test_lesson_two_keys_unscaled(student):
    q, k = in_a_batch(torch.tensor([[1.0, 1.0]]), seed=3), in_a_batch(torch.tensor([[2.0, 2.0], [1.0, 1.0]]), seed=4)
    result = check_scores(student, q, k, scale=1.0, what="scaled_scores(q, k, scale=1.0) of the lesson, in a batch")
    expect_close(result.value[0], torch.tensor([[4.0, 2.0]], dtype=torch.float64), "unscaled scores",
                 atol=1e-6, rtol=0)


@pytest.mark.parametrize("q_shape, k_shape", [
    ((7, 5), (3, 5)),                     # 2-D, L != S
    ((2, 1, 31), (2, 7, 31)),             # 3-D, one query, E = 31
    ((2, 3, 4, 6), (2, 3, 9, 6)),         # 4-D
    ((3, 8, 4), (3, 3, 8, 4)),            # the lesson's broadcast: (3, 8, 4) against (3, 3, 8, 4)
    ((2, 1, 5, 12), (1, 4, 7, 12)),       # batch dims broadcast both ways
    ((4, 6, 1), (4, 3, 1)),               # one feature (the default scale is 1 here)
], ids=["2d", "3d-one-query", "4d", "lesson-broadcast", "two-way-broadcast", "one-feature"])
def test_shapes_and_values_on_random_inputs(student, q_shape, k_shape):
    q, k = randn(*q_shape, seed=11), randn(*k_shape, seed=12)
    check_scores(student, q, k)


# scale=0.0 is gated: its answer, all zeros, is the same for every input, so it earns a point only beside a
# scaled_scores that computes.
@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0, pytest.param(0.0, marks=pytest.mark.gated("scaled_scores"))])
def test_explicit_scale_is_used_as_is(student, scale):
    """scale=0.0 is a scale, not a missing one: every score is 0 (`scale or default` gets it wrong)."""
    check_scores(student, randn(2, 4, 10, seed=13), randn(2, 6, 10, seed=14), scale=scale)


# E = 1 is left out: its default scale 1/sqrt(1) = 1 cannot tell scaled from unscaled scores.
@pytest.mark.parametrize("E", [2, 7, 31, 64])
def test_default_scale_uses_the_feature_size(student, E):
    check_scores(student, randn(3, E, seed=15 + E), randn(5, E, seed=16 + E))


@pytest.mark.gated("scaled_scores")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_keeps_the_input_dtype(student, dtype):
    q, k = randn(2, 5, 8, seed=17, dtype=dtype), randn(2, 3, 8, seed=18, dtype=dtype)
    result = expect_result(call(student.scaled_scores, q, k), (2, 5, 3), f"scaled_scores of {dtype} inputs")
    expect_dtype(result.value, dtype, f"scaled_scores of {dtype} inputs")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_values_agree_with_float64_math(student, dtype):
    check_scores(student, randn(2, 5, 8, seed=17, dtype=dtype), randn(2, 3, 8, seed=18, dtype=dtype))


def test_float64_inputs_are_computed_in_float64(student):
    """E = 58: 1/sqrt(58) rounded to float32 is off by 5e-8 of itself, so even a scale computed in float32 (as
    1 / torch.sqrt(torch.tensor(E)) is) shows at float64's tolerance."""
    check_scores(student, randn(2, 5, 58, seed=26, dtype=torch.float64, scale=3.0),
                 randn(2, 3, 58, seed=27, dtype=torch.float64, scale=3.0))


def test_gradients_agree_with_float64_math(student):
    q, k = randn(2, 4, 6, seed=19, dtype=torch.float64), randn(2, 5, 6, seed=20, dtype=torch.float64)
    upstream = randn(2, 4, 5, seed=21, dtype=torch.float64)
    result = call(student.scaled_scores, q, k, options=CallOptions(grad_outputs=(upstream,)))
    grad_q, grad_k = result.input_grads
    if grad_q is None or grad_k is None:
        fail("no gradient reached " + ("q" if grad_q is None else "k") + ": do not .detach() or use .item()/.tolist()")
    expect_close(grad_q, upstream @ k / math.sqrt(6), "gradient with respect to q")
    expect_close(grad_k, upstream.transpose(-2, -1) @ q / math.sqrt(6), "gradient with respect to k")


@pytest.mark.gated("scaled_scores")
def test_inputs_are_not_modified(student):
    q, k = randn(3, 4, 8, seed=22), randn(3, 6, 8, seed=23)
    result = expect_result(call(student.scaled_scores, q, k), (3, 4, 6), "scaled_scores(q (3, 4, 8), k (3, 6, 8))")
    expect_unmodified(result, "scaled_scores", ["q", "k"])


@pytest.mark.gated("scaled_scores")
def test_works_on_the_inputs_device(student, second_device):
    call_placed(second_device, student.scaled_scores, randn(2, 3, 5, seed=24), randn(2, 4, 5, seed=25), shape=(2, 3, 4))


def test_views_of_q_and_k_give_the_same_scores(student):
    """q and k as the views real callers pass (sliced, transposed, permuted in memory, expanded over the batch)."""
    q, k = randn(2, 3, 5, 6, seed=15), randn(2, 3, 4, 6, seed=16)
    q_views, k_views = laid_out(q), laid_out(k)
    for name in q_views:
        check_scores(student, q_views[name], k_views[name],
                     what=f"scaled_scores(q {tuple(q.shape)}, k {tuple(k.shape)}), each {name}")
    shared = randn(1, 3, 4, 6, seed=17)
    check_scores(student, q, shared.expand(2, 3, 4, 6),
                 what=f"scaled_scores(q {tuple(q.shape)}, k (2, 3, 4, 6) expanded from (1, 3, 4, 6))")
