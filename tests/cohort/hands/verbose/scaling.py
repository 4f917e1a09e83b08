"""Part 1: scaled dot-product scores.

Shapes are in the type hints: Annotated[torch.Tensor, "... L E"] is a tensor whose last two dims
are L and E, after any number of leading (batch) dims "...". The letters are the handout's:
B batch, H heads, L queries, S keys, E features, D = E // H features per head.
"""
# I write every if/else out in full on purpose, so the linter's "use a ternary" hint is switched off.
# ruff: noqa: SIM108
import math
from typing import Annotated

import torch


def _pick_working_dtype(original_dtype: torch.dtype) -> torch.dtype:
    """Return the dtype I do the arithmetic in for a tensor of original_dtype.

    Half precision types (float16 and bfloat16) are computed in float32 to keep
    the rounding small; every other dtype (float32, float64) is kept as it is,
    so float64 is never computed in lower precision.
    """
    # The two "small" float types that are allowed to be computed in float32
    low_precision_dtypes = (torch.float16, torch.bfloat16)
    # Check if the input is one of the small float types
    if original_dtype in low_precision_dtypes:
        # Yes: do the math in float32 instead
        working_dtype = torch.float32
    else:
        # No: keep the dtype exactly as it came in
        working_dtype = original_dtype
    # Give the chosen dtype back to the caller
    return working_dtype


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
    # The queries need at least two dims: (L, E)
    if q.dim() < 2:
        raise ValueError(f"q must have at least 2 dims (..., L, E), but it has shape {tuple(q.shape)}")
    # The keys need at least two dims too: (S, E)
    if k.dim() < 2:
        raise ValueError(f"k must have at least 2 dims (..., S, E), but it has shape {tuple(k.shape)}")

    # The number of features of every query vector
    number_of_query_features = q.size(-1)
    # The number of features of every key vector
    number_of_key_features = k.size(-1)
    # A dot product only makes sense when both vectors have the same length
    if number_of_query_features != number_of_key_features:
        raise ValueError(
            f"q and k must have the same last dim E, but q has E={number_of_query_features} "
            f"and k has E={number_of_key_features}"
        )

    # Remember the dtype of q, because the answer must come back in this dtype
    output_dtype = q.dtype
    # Choose the dtype the multiplication is done in (float32 for half types)
    working_dtype = _pick_working_dtype(output_dtype)

    # Convert the queries to the working dtype (this makes a new tensor if needed, q is untouched)
    queries_in_working_dtype = q.to(working_dtype)
    # Convert the keys to the working dtype too, so both sides of the matmul agree
    keys_in_working_dtype = k.to(working_dtype)

    # Decide which scale factor to use
    if scale is None:
        # The default: one over the square root of the number of features
        scale_factor = 1.0 / math.sqrt(number_of_query_features)
    else:
        # The caller gave an explicit scale, use it as it is
        scale_factor = scale

    # Turn the keys from (..., S, E) into (..., E, S) so the matmul gives (..., L, S)
    keys_transposed = keys_in_working_dtype.transpose(-2, -1)
    # Every query dotted with every key: (..., L, E) @ (..., E, S) -> (..., L, S)
    raw_dot_products = torch.matmul(queries_in_working_dtype, keys_transposed)
    # Multiply by the scale factor (out of place, so nothing is changed in place)
    scaled_dot_products = raw_dot_products * scale_factor

    # Go back to the dtype of q before returning
    scores_in_output_dtype = scaled_dot_products.to(output_dtype)
    # Return the scores, shape (..., L, S)
    return scores_in_output_dtype
