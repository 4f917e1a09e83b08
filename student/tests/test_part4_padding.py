"""Part 4: expand_padding_mask, with the lesson's combined causal and padding mask."""
import pytest
import torch

from student import causal_mask, expand_padding_mask, padding_mask
from student.tests.helpers import check_shape, check_values

pytestmark = pytest.mark.part4


def test_expanded_mask_shape():
    mask = torch.tensor([[True, True, False], [True, True, True]])
    check_shape(expand_padding_mask(mask, 4), (2, 1, 4, 3), "expand_padding_mask(mask (2,3), 4)")


def test_every_query_row_repeats_the_key_mask():
    mask = torch.tensor([[True, True, True, False]])
    expanded = expand_padding_mask(mask, 4)
    check_values(expanded[0, 0], mask.expand(4, 4), "expand_padding_mask(...)[0, 0]")


def test_combined_causal_and_padding_mask_for_eight_tokens_four_padded():
    real = padding_mask([4], max_len=8)
    combined = causal_mask(8) & expand_padding_mask(real, 8)[0, 0]
    # Causal lower triangle, and the columns of the 4 padded tokens are all False.
    expected = torch.tensor([[j <= min(i, 3) for j in range(8)] for i in range(8)])
    check_values(combined, expected, "causal_mask(8) & expanded padding mask")
