"""Part 3: splitting the embedding into heads and merging the heads back."""
import torch


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Cut the features of every token into num_heads equal slices.

    Args:
        x: (B, L, E).
        num_heads: H; must divide E.

    Returns:
        (B, H, L, D) with D = E // H, where head h holds features
        h*D ... (h+1)*D - 1 of every token: out[b, h, l, d] == x[b, l, h*D + d].

    Raises:
        ValueError (with a message naming E and H) when E % num_heads != 0.
    """
    raise NotImplementedError("Part 3: split_heads is not implemented yet")


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """Undo split_heads: (B, H, L, D) -> (B, L, H*D).

    merge_heads(split_heads(x, H)) must equal x exactly, for every H dividing E.
    """
    raise NotImplementedError("Part 3: merge_heads is not implemented yet")
