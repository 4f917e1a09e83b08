"""Part 4: expand_padding_mask, with the lesson's combined causal and padding mask."""
import pytest
import torch

from student import expand_padding_mask
from student.tests.helpers import check_dtype, check_mask, check_shape

pytestmark = pytest.mark.part4


def test_expanded_mask_shape():
    mask = torch.tensor([[True, True, False], [True, True, True]])
    check_shape(expand_padding_mask(mask, 4), (2, 1, 4, 3), "expand_padding_mask(mask (2,3), 4)")


def test_every_query_row_repeats_the_key_mask_as_a_bool_tensor():
    mask = torch.tensor([[True, True, True, False], [True, True, False, False]])
    expected = torch.stack([mask[0].expand(3, 4), mask[1].expand(3, 4)])[:, None]
    check_mask(expand_padding_mask(mask, 3), expected, "expand_padding_mask(mask (2,4), 3)")


def test_combined_causal_and_padding_mask_for_eight_tokens_four_padded():
    real = torch.tensor([[True] * 4 + [False] * 4])
    causal = torch.ones(8, 8, dtype=torch.bool).tril()
    expanded = expand_padding_mask(real, 8)
    check_shape(expanded, (1, 1, 8, 8), "expand_padding_mask(mask (1,8), 8)")
    check_dtype(expanded, torch.bool, "expand_padding_mask(mask (1,8), 8)", "a mask is a bool tensor")
    # Causal lower triangle, and the columns of the 4 padded tokens are all False.
    expected = torch.tensor([[j <= min(i, 3) for j in range(8)] for i in range(8)])
    check_mask(causal & expanded[0, 0], expected, "causal & expand_padding_mask(mask (1,8), 8)[0, 0]")
