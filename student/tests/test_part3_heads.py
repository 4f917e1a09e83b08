"""Part 3: split_heads and merge_heads."""
import pytest
import torch

from student import merge_heads, split_heads
from student.tests.helpers import check_shape, check_values

pytestmark = pytest.mark.part3


def test_split_heads_shape():
    check_shape(split_heads(torch.randn(2, 5, 12), 3), (2, 3, 5, 4), "split_heads(x (2,5,12), 3)")


def test_head_h_holds_features_h_times_d_onwards():
    # Features numbered 0..11 for one token: with 3 heads of 4, head 1 holds 4, 5, 6, 7.
    x = torch.arange(12.0).reshape(1, 1, 12)
    heads = split_heads(x, 3)
    check_values(heads[0, 1, 0], [4.0, 5.0, 6.0, 7.0], "head 1 of token 0")


def test_merge_heads_shape():
    check_shape(merge_heads(torch.randn(2, 3, 5, 4)), (2, 5, 12), "merge_heads(x (2,3,5,4))")


def test_merge_undoes_split():
    x = torch.randn(2, 7, 12)
    check_values(merge_heads(split_heads(x, 4)), x, "merge_heads(split_heads(x, 4))", atol=0, rtol=0)


def test_split_rejects_a_head_count_that_does_not_divide_the_width():
    with pytest.raises(ValueError):
        split_heads(torch.randn(1, 2, 10), 3)
