"""Part 3: split_heads(x, num_heads) and merge_heads(x)."""
import pytest
import torch

from grader.gateway import CallOptions, StudentError
from grading_tests import oracle
from grading_tests.checks import (
    call,
    expect_close,
    expect_dtype,
    expect_equal,
    expect_raises,
    expect_result,
    expect_tensor,
    expect_unmodified,
    fail,
    laid_out,
    randn,
)
from grading_tests.placement import call_placed

pytestmark = pytest.mark.part(3)

# (B, L, E, H): odd sizes, one head, one feature per head, head dims that are not powers of two.
SHAPES = [(2, 5, 12, 3), (1, 1, 7, 7), (3, 31, 21, 3), (2, 4, 6, 1), (1, 3, 35, 5)]
SHAPE_IDS = ["B2-L5-E12-H3", "L1-D1", "L31-D7", "one-head", "D7-H5"]


def split_hints(x, H):
    B, L, E = x.shape
    D = E // H
    return [
        ("matches a reshape to (B, H, L, D) without a transpose: reshape to (B, L, H, D) first, then transpose(1, 2)",
         lambda: x.reshape(B, H, L, D)),
        ("matches heads taking every H-th feature: head h must hold the contiguous features h*D ... (h+1)*D - 1",
         lambda: x.reshape(B, L, D, H).permute(0, 3, 1, 2)),
    ]


def merge_hints(x):
    B, H, L, D = x.shape
    return [
        ("matches a reshape to (B, L, H*D) without a transpose: transpose(1, 2) first, then reshape",
         lambda: x.reshape(B, L, H * D)),
        ("matches features interleaved across heads: concatenate the heads, head 0's D features first",
         lambda: x.permute(0, 2, 3, 1).reshape(B, L, H * D)),
    ]


def check_split(student, x, H, options=CallOptions()):
    result = call(student.split_heads, x, H, options=options)
    what = f"split_heads(x {tuple(x.shape)}, {H})"
    expected = oracle.split(x, H)
    expect_equal(result.value, expected, what, hints=split_hints(x, H))
    return result


def check_merge(student, x, options=CallOptions()):
    result = call(student.merge_heads, x, options=options)
    what = f"merge_heads(x {tuple(x.shape)})"
    expect_equal(result.value, oracle.merge(x), what, hints=merge_hints(x))
    return result


@pytest.mark.parametrize("B, L, E, H", SHAPES, ids=SHAPE_IDS)
def test_split_heads_values(student, B, L, E, H):
    check_split(student, randn(B, L, E, seed=200 + E), H)


@pytest.mark.parametrize("B, L, E, H", SHAPES, ids=SHAPE_IDS)
def test_merge_heads_values(student, B, L, E, H):
    check_merge(student, randn(B, H, L, E // H, seed=210 + E))


def test_split_heads_of_views(student):
    """x as the views real callers pass (sliced, transposed, permuted in memory, expanded over the batch)."""
    x = randn(2, 5, 12, seed=220)
    for name, view in {**laid_out(x), "a view expanded over the batch": x[:1].expand(2, 5, 12)}.items():
        result = call(student.split_heads, view, 3)
        expect_equal(result.value, oracle.split(view, 3), f"split_heads(x (2, 5, 12) as {name}, 3)",
                     hints=split_hints(view, 3))


def test_merge_heads_of_views(student):
    """x as the views real callers pass (sliced, transposed, permuted in memory, expanded over the batch)."""
    x = randn(2, 3, 5, 4, seed=221)
    for name, view in {**laid_out(x), "a view expanded over the batch": x[:1].expand(2, 3, 5, 4)}.items():
        result = call(student.merge_heads, view)
        expect_equal(result.value, oracle.merge(view), f"merge_heads(x (2, 3, 5, 4) as {name})",
                     hints=merge_hints(view))


def test_head_h_holds_features_h_times_d_onwards(student):
    x = torch.arange(12.0).reshape(1, 1, 12)
    result = check_split(student, x, 3)
    if not torch.equal(result.value[0, 1, 0], torch.tensor([4.0, 5.0, 6.0, 7.0])):
        fail("head 1 of features 0..11 split into 3 heads must hold features 4, 5, 6, 7")


@pytest.mark.gated("split_heads", "merge_heads")
@pytest.mark.parametrize("E, H", [(12, 4), (21, 7), (30, 5)])
def test_merge_undoes_split_exactly(student, E, H):
    """Your merge_heads against your split_heads: each may be wrong alone, the round trip must give x back."""
    x = randn(2, 7, E, seed=220 + E)
    heads = expect_tensor(call(student.split_heads, x, H).value, f"split_heads(x {tuple(x.shape)}, {H})")
    back = call(student.merge_heads, heads).value
    expect_equal(back, x, f"merge_heads(split_heads(x {tuple(x.shape)}, {H}))")


@pytest.mark.gated("split_heads")
def test_split_rejects_a_head_count_that_does_not_divide_the_width(student):
    expect_raises(student.split_heads, "ValueError", randn(1, 2, 10, seed=230), 3,
                  why="E=10 features cannot be cut into 3 equal heads")
    try:   # and only such a count: 10 features in 5 heads is fine (its values are other tests' business)
        student.split_heads(randn(1, 2, 10, seed=231), 5)
    except StudentError as error:
        if error.type_name == "ValueError":
            fail(f"split_heads(x (1, 2, 10), 5) raised ValueError ({error.message}), but 5 heads divide E=10")


@pytest.mark.gated("split_heads")
def test_split_error_message_names_the_width_and_the_head_count(student):
    error = expect_raises(student.split_heads, "ValueError", randn(1, 2, 10, seed=230), 3,
                          why="E=10 features cannot be cut into 3 equal heads")
    if "10" not in error.message or "3" not in error.message:
        fail(f"the ValueError's message should contain E=10 and num_heads=3 so the caller sees what is wrong; "
             f"it says: {error.message!r}")


def test_gradients_pass_through_split_and_merge(student):
    x = randn(2, 3, 12, seed=232, dtype=torch.float64)
    upstream = randn(2, 4, 3, 3, seed=233, dtype=torch.float64)
    result = call(student.split_heads, x, 4, options=CallOptions(grad_outputs=(upstream,)))
    grad = result.input_grads[0]
    if grad is None:
        fail("no gradient reached x through split_heads: do not detach")
    expect_close(grad, oracle.merge(upstream), "the gradient of split_heads with respect to x")
    heads = randn(2, 4, 3, 3, seed=234, dtype=torch.float64)
    upstream = randn(2, 3, 12, seed=235, dtype=torch.float64)
    result = call(student.merge_heads, heads, options=CallOptions(grad_outputs=(upstream,)))
    if result.input_grads[0] is None:
        fail("no gradient reached x through merge_heads: do not detach")
    expect_close(result.input_grads[0], oracle.split(upstream, 4), "the gradient of merge_heads with respect to x")


@pytest.mark.gated("split_heads", "merge_heads")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_keeps_the_dtype(student, dtype):
    heads = expect_result(call(student.split_heads, randn(2, 5, 12, seed=236, dtype=dtype), 3), (2, 3, 5, 4),
                          "split_heads(x (2, 5, 12), 3)").value
    expect_dtype(heads, dtype, "split_heads")
    merged = expect_result(call(student.merge_heads, randn(2, 3, 5, 4, seed=236, dtype=dtype)), (2, 5, 12),
                           "merge_heads(x (2, 3, 5, 4))").value
    expect_dtype(merged, dtype, "merge_heads")


@pytest.mark.gated("split_heads", "merge_heads")
def test_runs_on_the_inputs_device(student, second_device):
    call_placed(second_device, student.split_heads, randn(2, 5, 12, seed=237), 3, shape=(2, 3, 5, 4))
    call_placed(second_device, student.merge_heads, randn(2, 3, 5, 4, seed=238), shape=(2, 5, 12))


@pytest.mark.gated("split_heads", "merge_heads")
def test_inputs_are_not_modified(student):
    split = expect_result(call(student.split_heads, randn(2, 5, 12, seed=237), 3), (2, 3, 5, 4), "split_heads")
    expect_unmodified(split, "split_heads", ["x"])
    merged = expect_result(call(student.merge_heads, randn(2, 3, 5, 4, seed=239)), (2, 5, 12), "merge_heads")
    expect_unmodified(merged, "merge_heads", ["x"])
