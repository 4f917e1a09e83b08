"""Part 2: masks and masked attention weights, with the numbers worked out in the lesson."""
import pytest
import torch

from student import apply_mask, causal_mask, padding_mask, scaled_dot_product_attention
from student.tests.helpers import check_dtype, check_mask, check_pair, check_shape, check_values, t

pytestmark = pytest.mark.part2

# Raw scores of three tokens, the last of which is padding in the lesson's example.
SCORES = t([[7, -8, 6], [-3, 2, 4], [1, 6, -2]])
PADDED_WEIGHTS = [[1, 0, 0], [0.0067, 0.9933, 0], [0.0067, 0.9933, 0]]


def causal_mistakes(L, S):
    """The wrong causal masks a hint can name, for L queries and S keys."""
    ones = torch.ones(L, S, dtype=torch.bool)
    return [("it is upper-triangular (triu): True must be where key j <= query i",
             torch.ones(S, L, dtype=torch.bool).tril().T),
            ("it hides the diagonal: a query may attend to its own position", ones.tril(-1)),
            ("it is aligned to the bottom-right corner: align it to the top-left, as SDPA's is_causal does",
             ones.tril(S - L))]


def test_causal_mask_is_a_lower_triangular_bool_tensor():
    expected = [[True, False, False], [True, True, False], [True, True, True]]
    check_mask(causal_mask(3), expected, "causal_mask(3)", causal_mistakes(3, 3))


def test_causal_mask_with_more_keys_than_queries_is_top_left_aligned():
    expected = [[True, False, False, False], [True, True, False, False]]
    check_mask(causal_mask(2, 4), expected, "causal_mask(2, 4)", causal_mistakes(2, 4))


def test_padding_mask_marks_real_tokens():
    expected = [
        [True, True, True, False, False],
        [True, True, True, True, True],
        [True, True, True, True, False],
    ]
    check_mask(padding_mask([3, 5, 4]), expected, "padding_mask([3, 5, 4])")


def test_padding_mask_takes_a_tensor_and_respects_max_len():
    expected = [[True, False, False, False, False, False], [True, True, False, False, False, False]]
    check_mask(padding_mask(torch.tensor([1, 2]), max_len=6), expected, "padding_mask(tensor([1, 2]), max_len=6)")


def test_apply_mask_hides_padded_keys_from_softmax():
    keep = torch.tensor([True, True, False])  # last key is padding
    masked = apply_mask(SCORES, keep)
    check_shape(masked, SCORES.shape, "apply_mask(scores, padding)")
    check_values(torch.softmax(masked, dim=-1), PADDED_WEIGHTS, "softmax(apply_mask(scores, padding))")


def test_apply_mask_works_in_float16():
    # float16 holds numbers up to 65504 only: the fill value must fit (see the lesson).
    masked = apply_mask(SCORES.half(), torch.tensor([True, True, False]))
    check_dtype(masked, torch.float16, "apply_mask(float16 scores, mask)")
    check_values(torch.softmax(masked.float(), dim=-1), PADDED_WEIGHTS, "softmax(apply_mask(float16 scores, padding))",
                 atol=1e-3)


def test_apply_mask_does_not_modify_scores():
    scores = SCORES.clone()
    apply_mask(scores, torch.tensor([True, False, True]))
    assert torch.equal(scores, SCORES), "apply_mask changed its input scores in place: return a new tensor"


def test_attention_weights_under_a_causal_mask():
    # Using k = identity and scale=1 makes q @ k^T equal to the raw scores above.
    eye = torch.eye(3)
    _, weights = check_pair(scaled_dot_product_attention(SCORES, eye, eye, is_causal=True, scale=1.0),
                            "scaled_dot_product_attention(..., is_causal=True)")
    expected = [[1, 0, 0], [0.0067, 0.9933, 0], [0.0067, 0.9930, 0.0003]]
    check_values(weights, expected, "scaled_dot_product_attention weights with is_causal=True")


def test_two_key_example_unscaled():
    q, k, v = t([[1, 1]]), t([[2, 2], [1, 1]]), t([[3, 3], [4, 4]])
    output, weights = check_pair(scaled_dot_product_attention(q, k, v, scale=1.0),
                                 "scaled_dot_product_attention(q, k, v, scale=1.0)")
    check_values(weights, [[0.8808, 0.1192]], "scaled_dot_product_attention weights")
    check_values(output, [[3.1192, 3.1192]], "scaled_dot_product_attention output")


def test_two_key_example_scaled_with_eight_features():
    q = torch.ones(1, 8)
    k = torch.stack([2 * torch.ones(8), torch.ones(8)])
    v = torch.stack([3 * torch.ones(8), 4 * torch.ones(8)])
    output, weights = check_pair(scaled_dot_product_attention(q, k, v), "scaled_dot_product_attention(q, k, v)")
    check_values(weights, [[0.9442, 0.0558]], "scaled_dot_product_attention weights")
    check_values(output, torch.full((1, 8), 3.0558), "scaled_dot_product_attention output")


def test_causal_attention_of_the_lesson():
    q = t([[1, 0, 0], [0, 1, 0]])
    k = t([[1, 2, 3], [4, 5, 6]])
    v = t([[0, 1, 0], [1, 0, 1]])
    mask = torch.tensor([[True, False], [True, True]])   # causal, written out
    output, weights = check_pair(scaled_dot_product_attention(q, k, v, mask=mask),
                                 "scaled_dot_product_attention(q, k, v, mask=causal)")
    check_values(weights, [[1, 0], [0.1503, 0.8497]], "scaled_dot_product_attention weights")
    check_values(output, [[0, 1, 0], [0.8497, 0.1503, 0.8497]], "scaled_dot_product_attention output")


def test_values_may_have_another_width_than_keys():
    q, k, v = torch.randn(2, 4, 8), torch.randn(2, 6, 8), torch.randn(2, 6, 3)
    output, weights = check_pair(scaled_dot_product_attention(q, k, v), "scaled_dot_product_attention(q, k, v)")
    check_shape(output, (2, 4, 3), "scaled_dot_product_attention output for v of width 3")
    check_shape(weights, (2, 4, 6), "scaled_dot_product_attention weights")


def test_a_query_that_sees_no_key_gets_zeros_not_nan():
    q, k, v = torch.randn(2, 4), torch.randn(3, 4), torch.randn(3, 5)
    mask = torch.tensor([[True, True, False], [False, False, False]])
    output, weights = check_pair(scaled_dot_product_attention(q, k, v, mask=mask),
                                 "scaled_dot_product_attention(q, k, v, mask) with row 1 fully masked")
    check_shape(weights, (2, 3), "scaled_dot_product_attention weights")
    check_shape(output, (2, 5), "scaled_dot_product_attention output")
    check_values(weights[1], torch.zeros(3), "scaled_dot_product_attention weights of the fully masked row 1")
    check_values(output[1], torch.zeros(5), "scaled_dot_product_attention output of the fully masked row 1")
