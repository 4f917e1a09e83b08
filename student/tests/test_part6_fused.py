"""Part 6: the fused path (F.scaled_dot_product_attention) must agree with the manual one.

Both paths are compared with plain PyTorch math (nn.MultiheadAttention with the same weights),
so a failure says which of the two is off.
"""
import pytest
import torch

from student import MultiHeadAttention
from student.tests.helpers import check_values, pytorch_attention

pytestmark = pytest.mark.part6
# Where a manual path that disagrees may go wrong: Part 5's forward, or an earlier part's function it calls.
EARLIER = " (Part 5's forward, or an earlier part's function it calls: python -m student.check names which)"

EMBED_DIM, NUM_HEADS = 12, 3


def twin_modules():
    """A manual and a fused module with the same weights."""
    torch.manual_seed(0)
    manual = MultiHeadAttention(EMBED_DIM, NUM_HEADS).eval()
    fused = MultiHeadAttention(EMBED_DIM, NUM_HEADS, fused=True).eval()
    fused.load_state_dict(manual.state_dict())
    return manual, fused


def check_both_paths(x, **inputs):
    """Run both paths on the same inputs; fail naming the path that disagrees with plain PyTorch math."""
    manual, fused = twin_modules()
    call = ", ".join(["x", *(f"{key}={value}" if isinstance(value, bool) else key for key, value in inputs.items())])
    expected = pytorch_attention(manual, NUM_HEADS, x, **inputs)
    problems = {}
    for name, module in (("manual", manual), ("fused", fused)):
        try:
            check_values(module(x, **inputs), expected,
                         f"MultiHeadAttention({EMBED_DIM}, {NUM_HEADS}, fused={name == 'fused'})({call})", atol=1e-5)
        except AssertionError as error:
            problems[name] = str(error)
    if set(problems) == {"fused"}:
        raise AssertionError("the FUSED path (your _fused_attention) disagrees with plain PyTorch math; "
                             f"the manual path agrees. {problems['fused']}")
    if set(problems) == {"manual"}:
        raise AssertionError("the MANUAL path (fused=False, Part 5) disagrees with plain PyTorch math; "
                             f"the fused path agrees, so fix the manual path first{EARLIER}. {problems['manual']}")
    if problems:
        raise AssertionError(f"BOTH paths disagree with plain PyTorch math (fix the manual path first{EARLIER}). "
                             f"Manual: {problems['manual']}; fused: {problems['fused']}")


@pytest.mark.parametrize("is_causal", [False, True])
def test_fused_matches_manual_on_self_attention(is_causal):
    check_both_paths(torch.randn(2, 6, EMBED_DIM), is_causal=is_causal)


def test_fused_matches_manual_with_padding_and_causal_masks():
    real = torch.tensor([[True] * 5, [True, True, False, False, False], [True] * 4 + [False]])
    check_both_paths(torch.randn(3, 5, EMBED_DIM), padding_mask=real, is_causal=True)


def test_fused_matches_manual_on_cross_attention():
    real = torch.tensor([[True] * 7, [True] * 3 + [False] * 4])
    check_both_paths(torch.randn(2, 4, EMBED_DIM), context=torch.randn(2, 7, EMBED_DIM), padding_mask=real)
