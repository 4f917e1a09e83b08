"""Part 4: expand_padding_mask(mask (B, S), num_queries) -> (B, 1, L, S)."""
import pytest
import torch
import torch.nn.functional as F

from grader.gateway import CallOptions
from grading_tests import oracle
from grading_tests.checks import (
    call,
    expect_equal,
    expect_result,
    expect_shape,
    expect_unmodified,
    fail,
    laid_out,
    randn,
)
from grading_tests.placement import call_placed

pytestmark = pytest.mark.part(4)


def expansion_hints(mask, L):
    B, S = mask.shape
    return [
        ("matches the inverted mask: True marks the real tokens and must stay True",
         lambda: ~oracle.expand(mask, L)),
        ("matches masking the padded QUERY rows instead of the padded KEY columns: out[b, 0, i, j] = mask[b, j]",
         lambda: mask.reshape(B, 1, S, 1).expand(B, 1, S, S).clone() if L == S else None),
        ("matches masking both padded queries and padded keys: padded queries must still see the real keys",
         lambda: (mask.reshape(B, 1, S, 1) & mask.reshape(B, 1, 1, S)).clone() if L == S else None),
    ]


def check_expansion(student, mask, L, options=CallOptions(), what=None):
    B, S = mask.shape
    result = call(student.expand_padding_mask, mask, L, options=options)
    what = what or f"expand_padding_mask(mask {tuple(mask.shape)}, {L})"
    got = result.value
    if isinstance(got, torch.Tensor) and tuple(got.shape) == (B, 1, S, L) != (B, 1, L, S):
        fail(f"{what} has shape {tuple(got.shape)}, expected {(B, 1, L, S)}: queries go in dim 2, keys in dim 3")
    if isinstance(got, torch.Tensor) and got.dim() == 4 and got.shape[1] != 1 and tuple(got.shape)[2:] == (L, S):
        fail(f"{what} has shape {tuple(got.shape)}, expected {(B, 1, L, S)}: keep a size-1 head dim "
             f"so the mask broadcasts over any number of heads")
    expect_equal(got, oracle.expand(mask, L), what, hints=expansion_hints(mask, L))
    return result


@pytest.mark.parametrize("lengths, max_len, L", [
    ([3, 5, 4], None, 4),       # the lesson's batch, L != S
    ([2, 7], 7, 7),             # L == S
    ([1, 3, 3, 2], 3, 1),       # one query
    ([5, 1], 6, 31),            # many queries, S = 6
], ids=["lesson", "square", "one-query", "many-queries"])
def test_every_query_row_repeats_the_key_mask(student, lengths, max_len, L):
    check_expansion(student, oracle.padding(lengths, max_len), L)


def test_views_of_the_mask_expand_the_same(student):
    """mask as the views real callers pass (sliced, transposed in memory)."""
    mask = oracle.padding([3, 5, 1], 6)
    for name, view in laid_out(mask).items():
        check_expansion(student, view, 4, what=f"expand_padding_mask(mask (3, 6) as {name}, 4)")


def test_lesson_combined_causal_and_padding_mask(student):
    real = torch.cat([oracle.padding([4], 8), oracle.padding([6, 1], 8)])   # the lesson's sentence, and two more
    expanded = check_expansion(student, real, 8).value
    combined = oracle.causal(8) & expanded[0, 0]
    expected = torch.tensor([[j <= min(i, 3) for j in range(8)] for i in range(8)])
    expect_equal(combined, expected, "causal_mask(8) & the expanded mask of 8 tokens with 4 padded")


@pytest.mark.gated("expand_padding_mask")
def test_torch_sdpa_accepts_the_expanded_mask_for_any_head_count(student):
    """Shape and dtype only: whatever its values, SDPA must take the mask as attn_mask for 4 heads."""
    real = oracle.padding([5, 2, 4])
    expanded = expect_result(call(student.expand_padding_mask, real, 3), (3, 1, 3, 5),
                             "expand_padding_mask(mask (3, 5), 3)").value
    q, k, v = randn(3, 4, 3, 6, seed=300), randn(3, 4, 5, 6, seed=301), randn(3, 4, 5, 6, seed=302)
    try:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=expanded)
    except RuntimeError as error:
        fail(f"torch's SDPA rejected the expanded mask for 4 heads: {error}")
    expect_shape(out, (3, 4, 3, 6), "SDPA output with the expanded mask")


@pytest.mark.gated("expand_padding_mask")
def test_runs_on_the_masks_device(student, second_device):
    call_placed(second_device, student.expand_padding_mask, oracle.padding([2, 4, 3]), 5, shape=(3, 1, 5, 4))


@pytest.mark.gated("expand_padding_mask")
def test_leaves_the_mask_unmodified(student):
    result = expect_result(call(student.expand_padding_mask, oracle.padding([2, 4, 3]), 5), (3, 1, 5, 4),
                           "expand_padding_mask(mask (3, 4), 5)")
    expect_unmodified(result, "expand_padding_mask", ["mask"])
