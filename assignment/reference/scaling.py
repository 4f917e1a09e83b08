"""Part 1: scaled dot-product scores."""
import torch


def scaled_scores(q: torch.Tensor, k: torch.Tensor, scale: float | None = None) -> torch.Tensor:
    """Similarity of every query with every key, scaled.

    Args:
        q: queries, shape (..., L, E).
        k: keys, shape (..., S, E). Leading dims of q and k broadcast against
            each other, like torch.matmul; plain 2-D (L, E) and (S, E) work too.
        scale: multiply the dot products by this number. None means
            1 / sqrt(E) with E = q.size(-1), the "scaled" in scaled dot-product
            attention: it keeps the scores' variance near 1 whatever E is.

    Returns:
        scores of shape (..., L, S) where scores[..., i, j] = (q_i . k_j) * scale,
        in the dtype and on the device of q.

    Rules: never modify q or k in place; keep autograd working (no .detach(),
    no .item() in the computation, no new tensor on a hard-coded device).
    """
    # BEGIN SOLUTION
    if scale is None:
        scale = q.size(-1) ** -0.5
    return torch.matmul(q, k.transpose(-2, -1)) * scale
    # END SOLUTION
