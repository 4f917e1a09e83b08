"""Part 1: scaled dot-product scores.

Shapes are in the type hints: Annotated[torch.Tensor, "... L E"] is a tensor whose last two dims
are L and E, after any number of leading (batch) dims "...". The letters are the handout's:
B batch, H heads, L queries, S keys, E features, D = E // H features per head.
"""
from typing import Annotated

import torch


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float16/bfloat16 are worked in float32; every other dtype in itself."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def scaled_scores(
    q: Annotated[torch.Tensor, "... L E"],
    k: Annotated[torch.Tensor, "... S E"],
    scale: float | None = None,
) -> Annotated[torch.Tensor, "... L S"]:
    """Similarity of every query with every key, scaled.

    Args:
        q: queries, shape (..., L, E).
        k: keys, shape (..., S, E). Leading dims of q and k broadcast against
            each other, like torch.matmul; plain 2-D (L, E) and (S, E) work too.
        scale: multiply the dot products by this number. None means
            1 / sqrt(E) with E = q.size(-1), the "scaled" in scaled dot-product
            attention: it keeps the scores' variance near 1 whatever E is.

    Returns:
        scores of shape (..., L, S) where scores[..., i, j] = (q_i . k_j) * scale.

    Rules (the grader checks each one):
        - Works in float16, bfloat16, float32 and float64; the result has the
          dtype of q and lives on the device of q.
        - float64 inputs are computed in float64 all the way (no .float() on
          the way); float16 and bfloat16 may be computed in float32 and cast back.
        - Autograd works: no .detach(), no .item(), no torch.no_grad().
        - q and k are never modified in place.
    """
    if scale is None:
        scale = q.size(-1) ** -0.5
    work = _compute_dtype(q.dtype)
    scores = torch.matmul(q.to(work), k.to(work).transpose(-2, -1)) * scale
    return scores.to(q.dtype)
