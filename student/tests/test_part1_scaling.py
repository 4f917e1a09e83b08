"""Part 1: scaled_scores, with the numbers worked out in the lesson."""
import math

import pytest
import torch

from student import scaled_scores
from student.tests.helpers import check_dtype, check_shape, check_values, t

pytestmark = pytest.mark.part1


def test_unscaled_scores_are_plain_dot_products():
    # One query [1, 1] against keys [2, 2] and [1, 1]: dot products 4 and 2.
    q, k = t([[1, 1]]), t([[2, 2], [1, 1]])
    check_values(scaled_scores(q, k, scale=1.0), [[4.0, 2.0]], "scaled_scores(q, k, scale=1.0)")


def test_default_scale_is_one_over_sqrt_of_feature_count():
    # With 8 features the dot products are 16 and 8; divided by sqrt(8): 5.6569 and 2.8284.
    q, k = torch.ones(1, 8), torch.stack([2 * torch.ones(8), torch.ones(8)])
    check_values(scaled_scores(q, k), [[16 / math.sqrt(8), 8 / math.sqrt(8)]], "scaled_scores(q, k)")


def test_scores_have_one_row_per_query_and_one_column_per_key():
    q, k = torch.randn(2, 5, 4), torch.randn(2, 7, 4)
    check_shape(scaled_scores(q, k), (2, 5, 7), "scaled_scores(q (2,5,4), k (2,7,4))")


def test_leading_dims_broadcast():
    # Q (3, 8, 4) against K (3, 3, 8, 4): the batch dims broadcast like matmul.
    q, k = torch.ones(3, 8, 4), torch.ones(3, 3, 8, 4)
    check_shape(scaled_scores(q, k), (3, 3, 8, 8), "scaled_scores(q (3,8,4), k (3,3,8,4))")


def test_float64_scores_stay_float64():
    q, k = torch.ones(1, 8, dtype=torch.float64), torch.ones(2, 8, dtype=torch.float64)
    check_dtype(scaled_scores(q, k), torch.float64, "scaled_scores(float64 q, float64 k)",
                "float64 inputs must never be computed in a lower precision")
