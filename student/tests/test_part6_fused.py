"""Part 6: the fused path (F.scaled_dot_product_attention) must agree with the manual one."""
import pytest
import torch

from student import MultiHeadAttention, padding_mask
from student.tests.helpers import check_values

pytestmark = pytest.mark.part6


def twin_modules(embed_dim=12, num_heads=3):
    """A manual and a fused module with the same weights."""
    torch.manual_seed(0)
    manual = MultiHeadAttention(embed_dim, num_heads).eval()
    fused = MultiHeadAttention(embed_dim, num_heads, fused=True).eval()
    fused.load_state_dict(manual.state_dict())
    return manual, fused


@pytest.mark.parametrize("is_causal", [False, True])
def test_fused_matches_manual_on_self_attention(is_causal):
    manual, fused = twin_modules()
    x = torch.randn(2, 6, 12)
    check_values(fused(x, is_causal=is_causal), manual(x, is_causal=is_causal), "fused output", atol=1e-5)


def test_fused_matches_manual_with_padding_and_causal_masks():
    manual, fused = twin_modules()
    x, real = torch.randn(3, 5, 12), padding_mask([5, 2, 4])
    expected = manual(x, padding_mask=real, is_causal=True)
    check_values(fused(x, padding_mask=real, is_causal=True), expected, "fused output", atol=1e-5)


def test_fused_matches_manual_on_cross_attention():
    manual, fused = twin_modules()
    x, context, real = torch.randn(2, 4, 12), torch.randn(2, 7, 12), padding_mask([7, 3])
    expected = manual(x, context=context, padding_mask=real)
    check_values(fused(x, context=context, padding_mask=real), expected, "fused output", atol=1e-5)
