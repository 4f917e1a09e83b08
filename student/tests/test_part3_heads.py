"""Part 3: split_heads and merge_heads, each checked on its own, then together."""
import pytest
import torch

from student import merge_heads, split_heads
from student.tests.helpers import check_raises_value_error, check_shape, check_values


def numbered_tokens(batch, length, width):
    """x[b, l, e] = b * 1000 + l * 100 + e: every entry says which token and feature it came from."""
    return (torch.arange(batch)[:, None, None] * 1000 + torch.arange(length)[None, :, None] * 100
            + torch.arange(width)[None, None, :]).float()


def origin(value: float) -> str:
    b, rest = divmod(int(value), 1000)
    token, feature = divmod(rest, 100)
    return f"x[{b}, {token}, {feature}] (token {token}, feature {feature})"


pytestmark = pytest.mark.part3


def test_split_heads_shape():
    check_shape(split_heads(torch.randn(2, 5, 12), 3), (2, 3, 5, 4), "split_heads(x (2,5,12), 3)")


def test_each_head_owns_its_slice_of_every_token():
    # 2 sequences of 3 tokens with E = 6 features and H = 3 heads of D = 2:
    # heads[b, h, l, d] must be x[b, l, h * D + d] (head 1 of token 2 holds features 2 and 3 of token 2).
    x = numbered_tokens(2, 3, 6)
    heads = split_heads(x, 3)
    check_shape(heads, (2, 3, 3, 2), "split_heads(x (2,3,6), 3)")
    for b in range(2):
        for h in range(3):
            for token in range(3):
                for d in range(2):
                    got, expected = float(heads[b, h, token, d]), float(x[b, token, h * 2 + d])
                    assert got == expected, (
                        f"split_heads(x (2,3,6), 3)[{b}, {h}, {token}, {d}] should be {origin(expected)}, "
                        f"got {origin(got) if got.is_integer() and got >= 0 else got}: head {h} of token {token} "
                        f"must hold features {h * 2}..{h * 2 + 1} of token {token}"
                    )


def test_merge_heads_shape():
    check_shape(merge_heads(torch.randn(2, 3, 5, 4)), (2, 5, 12), "merge_heads(x (2,3,5,4))")


def test_merge_heads_puts_head_h_at_features_h_times_d_onwards():
    # heads (B=1, H=2, L=3, D=2) -> (1, 3, 4): token l is [head 0 of token l, head 1 of token l].
    heads = torch.arange(12.0).reshape(1, 2, 3, 2)
    expected = torch.cat([heads[:, 0], heads[:, 1]], dim=-1)
    check_values(merge_heads(heads), expected, "merge_heads(heads (1,2,3,2))", atol=0, rtol=0)


def test_merge_undoes_split():
    x = torch.randn(2, 7, 12)
    check_values(merge_heads(split_heads(x, 4)), x, "merge_heads(split_heads(x, 4))", atol=0, rtol=0)


def test_split_rejects_a_head_count_that_does_not_divide_the_width():
    check_raises_value_error(lambda: split_heads(torch.randn(1, 2, 10), 3), "split_heads(x (1,2,10), 3)")
