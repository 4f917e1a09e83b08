"""Part 4: from a (B, S) padding mask to the 4-D mask attention needs.

Shapes are in the type hints (see scaling.py): "B S" is batch and keys.
"""
from typing import Annotated

import torch


def expand_padding_mask(mask: Annotated[torch.Tensor, "B S"], num_queries: int) -> Annotated[torch.Tensor, "B 1 L S"]:
    """Turn a per-token padding mask into a per-(query, key) attention mask.

    Args:
        mask: bool (B, S), True for real key tokens (see masking.padding_mask).
        num_queries: L, the number of queries that will look at these keys.

    Returns:
        bool (B, 1, L, S): out[b, 0, i, j] == mask[b, j] for every query i.
        Every query row repeats the key mask, so the columns of padded keys are
        False while padded queries still see the real keys. The size-1 dim
        broadcasts over heads, the shape torch's SDPA accepts as attn_mask.

    Rules (the grader checks each one): the result lives on the device of
    mask; mask is never modified in place.
    """
    keys = mask.to(torch.bool)[:, None, None, :]
    every_query = torch.ones(num_queries, 1, dtype=torch.bool, device=mask.device)
    return every_query & keys
