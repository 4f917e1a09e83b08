"""Part 5: MultiHeadAttention, with the lesson's 3-token, 2-feature example and against PyTorch's own module."""
import pytest
import torch

from student import MultiHeadAttention
from student.tests.helpers import check_raises_value_error, check_shape, check_values, pytorch_attention

pytestmark = pytest.mark.part5

# What a comparison with PyTorch's own module says it compares with.
AGAINST_TORCH = "against nn.MultiheadAttention with the same weights"

TOKENS = torch.tensor([[[1.16, 0.23], [0.57, 1.36], [4.41, -2.16]]])
# Two queries from another sequence, attending to TOKENS (the lesson's cross-attention example).
DECODER_TOKENS = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
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


def random_module(embed_dim=12, num_heads=3):
    torch.manual_seed(0)
    return MultiHeadAttention(embed_dim, num_heads).eval()


def test_parameters_are_the_four_projections():
    names = sorted(name for name, _ in MultiHeadAttention(8, 2).named_parameters())
    expected = sorted(f"{p}_proj.{w}" for p in ("q", "k", "v", "out") for w in ("weight", "bias"))
    assert names == expected, f"MultiHeadAttention(8, 2) has parameters {names}, expected {expected}"


def test_self_attention_of_the_lesson():
    expected = [[1.0100, 1.0641], [0.2040, 0.7057], [3.4989, 2.2427]]
    check_values(lesson_module()(TOKENS)[0], expected, "MultiHeadAttention (the lesson's module)(x)", atol=2e-3)


def test_causal_self_attention_of_the_lesson():
    expected = [[0.6038, 0.7434], [-0.0062, 0.6072], [3.4989, 2.2427]]
    check_values(lesson_module()(TOKENS, is_causal=True)[0], expected,
                 "MultiHeadAttention (the lesson's module)(x, is_causal=True)", atol=2e-3)


def test_cross_attention_of_the_lesson():
    expected = [[1.3022, 1.1991], [0.3983, 0.7889]]
    check_values(lesson_module()(DECODER_TOKENS, context=TOKENS)[0], expected,
                 "MultiHeadAttention (the lesson's module)(decoder tokens, context=x)", atol=2e-3)


def test_cross_attention_with_the_same_sequence_equals_self_attention():
    module = lesson_module()
    check_values(module(TOKENS, context=TOKENS), module(TOKENS),
                 "MultiHeadAttention(x, context=x), against MultiHeadAttention(x),")


@pytest.mark.parametrize("is_causal", [False, True])
def test_three_heads_agree_with_pytorchs_module(is_causal):
    # nn.MultiheadAttention with your module's weights: heads split as in Part 3, scale 1/sqrt(D) per head.
    module, x = random_module(), torch.randn(2, 5, 12)
    what = f"MultiHeadAttention(12, 3)(x, is_causal={is_causal}), {AGAINST_TORCH},"
    check_values(module(x, is_causal=is_causal), pytorch_attention(module, 3, x, is_causal=is_causal), what, atol=1e-5)


def test_three_heads_with_a_padding_mask_agree_with_pytorchs_module():
    module, x = random_module(), torch.randn(2, 5, 12)
    real = torch.tensor([[True] * 5, [True, True, False, False, False]])
    check_values(module(x, padding_mask=real), pytorch_attention(module, 3, x, padding_mask=real),
                 f"MultiHeadAttention(12, 3)(x, padding_mask), {AGAINST_TORCH},", atol=1e-5)


def test_three_heads_cross_attention_agrees_with_pytorchs_module():
    module, x, context = random_module(), torch.randn(2, 4, 12), torch.randn(2, 6, 12)
    real = torch.tensor([[True] * 6, [True, True, True, False, False, False]])
    out = module(x, context=context, padding_mask=real)
    check_shape(out, (2, 4, 12), "MultiHeadAttention(12, 3)(x (2,4,12), context (2,6,12))")
    check_values(out, pytorch_attention(module, 3, x, context=context, padding_mask=real),
                 f"MultiHeadAttention(12, 3)(x, context, padding_mask), {AGAINST_TORCH},",
                 atol=1e-5)


def test_rejects_a_head_count_that_does_not_divide_the_width():
    check_raises_value_error(lambda: MultiHeadAttention(10, 3), "MultiHeadAttention(10, 3)")


def test_causal_cross_attention_is_rejected():
    module = MultiHeadAttention(4, 2)
    check_raises_value_error(lambda: module(torch.randn(1, 3, 4), context=torch.randn(1, 5, 4), is_causal=True),
                             "MultiHeadAttention(4, 2)(x, context=c, is_causal=True)")
