"""Part 5: MultiHeadAttention, with the lesson's 3-token, 2-feature example."""
import pytest
import torch

from student import MultiHeadAttention
from student.tests.helpers import check_shape, check_values

pytestmark = pytest.mark.part5

TOKENS = torch.tensor([[[1.16, 0.23], [0.57, 1.36], [4.41, -2.16]]])
# The lesson prints W transposed (inputs along rows); nn.Linear stores W itself.
W_Q = torch.tensor([[0.5406, -0.1657], [0.5869, 0.6496]]).T
W_K = torch.tensor([[-0.1549, -0.3443], [0.1427, 0.4153]]).T
W_V = torch.tensor([[0.6233, 0.6146], [-0.5188, 0.1323]]).T


def lesson_module(fused=False):
    """One head, no bias, the lesson's weights and an identity output projection."""
    module = MultiHeadAttention(2, 1, bias=False, fused=fused).eval()
    with torch.no_grad():
        module.q_proj.weight.copy_(W_Q)
        module.k_proj.weight.copy_(W_K)
        module.v_proj.weight.copy_(W_V)
        module.out_proj.weight.copy_(torch.eye(2))
    return module


def test_parameters_are_the_four_projections():
    names = sorted(name for name, _ in MultiHeadAttention(8, 2).named_parameters())
    expected = sorted(f"{p}_proj.{w}" for p in ("q", "k", "v", "out") for w in ("weight", "bias"))
    assert names == expected, f"parameters are {names}, expected {expected}"


def test_self_attention_of_the_lesson():
    expected = [[1.0100, 1.0641], [0.2040, 0.7057], [3.4989, 2.2427]]
    check_values(lesson_module()(TOKENS)[0], expected, "self-attention output", atol=2e-3)


def test_causal_self_attention_of_the_lesson():
    expected = [[0.6038, 0.7434], [-0.0062, 0.6072], [3.4989, 2.2427]]
    check_values(lesson_module()(TOKENS, is_causal=True)[0], expected, "causal self-attention output", atol=2e-3)


def test_cross_attention_with_the_same_sequence_equals_self_attention():
    module = lesson_module()
    check_values(module(TOKENS, context=TOKENS), module(TOKENS), "cross-attention to x itself")


def test_cross_attention_output_has_the_query_length():
    module = MultiHeadAttention(12, 3)
    out = module(torch.randn(2, 5, 12), context=torch.randn(2, 9, 12))
    check_shape(out, (2, 5, 12), "cross-attention of 5 queries over 9 keys")


def test_rejects_a_head_count_that_does_not_divide_the_width():
    with pytest.raises(ValueError):
        MultiHeadAttention(10, 3)


def test_causal_cross_attention_is_rejected():
    module = MultiHeadAttention(4, 2)
    with pytest.raises(ValueError):
        module(torch.randn(1, 3, 4), context=torch.randn(1, 5, 4), is_causal=True)
