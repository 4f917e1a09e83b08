"""Part 4: from a (B, S) padding mask to the 4-D mask attention needs.

Shapes are in the type hints (see scaling.py): "B S" is batch and keys.
"""
# I write every if/else out in full on purpose, so the linter's "use a ternary" hint is switched off.
# ruff: noqa: SIM108
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
    # The padding mask must be 2-D: one row of S flags per batch element
    if mask.dim() != 2:
        raise ValueError(f"expand_padding_mask expects a mask of shape (B, S), but got shape {tuple(mask.shape)}")
    # A negative number of queries is not possible
    if num_queries < 0:
        raise ValueError(f"num_queries must be zero or more, but got num_queries={num_queries}")

    # Make sure the mask is boolean (True = real token), without touching the original
    if mask.dtype == torch.bool:
        # Already boolean, use it as it is
        boolean_key_mask = mask
    else:
        # Anything non-zero counts as a real token
        boolean_key_mask = mask != 0

    # Read the batch size and the number of keys
    batch_size = boolean_key_mask.size(0)
    number_of_keys = boolean_key_mask.size(1)

    # Add a head dim and a query dim: (B, S) -> (B, 1, 1, S)
    mask_with_new_dims = boolean_key_mask.reshape(batch_size, 1, 1, number_of_keys)
    # Repeat the key row for every query: (B, 1, 1, S) -> (B, 1, L, S) (a view, no memory yet)
    expanded_view = mask_with_new_dims.expand(batch_size, 1, num_queries, number_of_keys)
    # Make a real copy so the result owns its memory and never aliases the input mask
    expanded_mask = expanded_view.clone()
    # Return the (B, 1, L, S) mask
    return expanded_mask
