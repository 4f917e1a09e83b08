"""Part 2: masks, and attention weights that respect them.

Convention, as in torch.nn.functional.scaled_dot_product_attention:
a boolean mask is True where a query MAY attend to a key, False where it may not.
Shapes are in the type hints (see scaling.py): "... L S" ends in L queries and S keys.
"""
from collections.abc import Sequence
from typing import Annotated

import torch
import torch.nn.functional as F

from .scaling import _work_dtype, scaled_scores


def _positions(n: int, device) -> torch.Tensor:
    """0, 1, ..., n-1 as a long tensor on `device`."""
    return torch.arange(n, device=device)


def _and_masks(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Logical and of the masks that are given (None ones are skipped); None when none is given."""
    combined = None
    for mask in masks:
        if mask is None:
            continue
        mask = mask.to(torch.bool)
        combined = mask if combined is None else combined & mask
    return combined


def _hidden_value(dtype: torch.dtype) -> float:
    """The most negative finite number of dtype: softmax maps it to exactly 0 and never yields NaN."""
    return torch.finfo(dtype).min


def causal_mask(
    L: int,
    S: int | None = None,
    *,
    device: torch.device | str | None = None,
) -> Annotated[torch.Tensor, "L S"]:
    """The mask that lets each query see only keys at or before its own position.

    Args:
        L: number of queries.
        S: number of keys; None means S = L.
        device: where to create the mask (None: torch's default device).

    Returns:
        bool tensor of shape (L, S) with mask[i, j] = True exactly when j <= i.
        When L != S it is aligned to the top-left corner, as SDPA's is_causal:
        row 0 always sees key 0.
    """
    if S is None:
        S = L
    rows = _positions(L, device)[:, None]
    cols = _positions(S, device)[None, :]
    return cols <= rows


def padding_mask(
    lengths: Sequence[int] | Annotated[torch.Tensor, "B"],
    max_len: int | None = None,
    *,
    device: torch.device | str | None = None,
) -> Annotated[torch.Tensor, "B max_len"]:
    """The mask that marks the real (not padded) tokens of a batch.

    Args:
        lengths: the true length of each sequence: a sequence of ints or a
            1-D integer tensor with B entries.
        max_len: padded length; None means max(lengths).
        device: where to create the mask; None means the device of `lengths`
            when it is a tensor, else torch's default device.

    Returns:
        bool tensor of shape (B, max_len), True for the first lengths[b]
        positions of row b (real tokens) and False for the padding after them.
    """
    if device is None and isinstance(lengths, torch.Tensor):
        device = lengths.device
    lengths = torch.as_tensor(lengths, dtype=torch.long, device=device).reshape(-1)
    if max_len is None:
        max_len = int(lengths.max()) if lengths.numel() else 0
    return _positions(max_len, lengths.device)[None, :] < lengths[:, None]


def apply_mask(
    scores: Annotated[torch.Tensor, "... L S"],
    mask: Annotated[torch.Tensor, "... L S"] | None,
) -> Annotated[torch.Tensor, "... L S"]:
    """Hide the masked-out scores from the softmax.

    Args:
        scores: attention scores, shape (..., L, S), any float dtype.
        mask: None, or a bool tensor that broadcasts to scores.shape
            (True = keep, False = hide).

    Returns:
        None mask: scores unchanged. Otherwise a NEW tensor equal to scores where
        mask is True and, where it is False, a value that softmax turns into
        exactly 0: float('-inf') or torch.finfo(scores.dtype).min. (A literal
        such as -1e9 does not fit in float16 and fails there.)
        The result has the dtype and the device of scores; scores and mask
        are never modified in place.
    """
    if mask is None:
        return scores
    hidden = scores.new_full((), _hidden_value(scores.dtype))
    return torch.where(mask.to(torch.bool), scores, hidden)


def scaled_dot_product_attention(
    q: Annotated[torch.Tensor, "... L E"],
    k: Annotated[torch.Tensor, "... S E"],
    v: Annotated[torch.Tensor, "... S Ev"],
    mask: Annotated[torch.Tensor, "... L S"] | None = None,
    *,
    is_causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
) -> tuple[Annotated[torch.Tensor, "... L Ev"], Annotated[torch.Tensor, "... L S"]]:
    """Attention by hand: softmax(mask(q kᵀ · scale)) v.

    Args:
        q: queries (..., L, E); k: keys (..., S, E); v: values (..., S, Ev).
            Ev may differ from E. Leading dims broadcast.
        mask: None or a bool tensor broadcastable to (..., L, S), True = may attend.
        is_causal: also hide keys after each query (see causal_mask). With a mask
            too, a key is visible only when both allow it (logical and).
        scale: as in scaled_scores (None means 1/sqrt(E)).
        dropout_p: probability of zeroing each attention weight (the survivors
            are divided by 1 - dropout_p, as torch.nn.functional.dropout does).
            0.0 means no dropout.

    Returns:
        (output, weights):
        weights (..., L, S): softmax over the last dim of the masked, scaled
            scores; each row sums to 1 over its visible keys. A query row with
            no visible key at all gets all-zero weights (never NaN), as torch's
            SDPA does. With dropout, these are the weights after dropout, the
            ones actually multiplied with v.
        output (..., L, Ev) = weights @ v.

    Rules (the grader checks each one):
        - Works in float16, bfloat16, float32 and float64; output and weights
          have the dtype of q and live on the device of q.
        - float64 inputs are computed in float64 all the way (a softmax with
          dtype=torch.float32 fails); float16 and bfloat16 may be computed in
          float32 and cast back.
        - Autograd works (gradients reach q, k and v).
        - q, k, v and mask are never modified in place.
        - Do not call torch.nn.functional.scaled_dot_product_attention here (nor nn.MultiheadAttention):
          a hidden test during which your code calls it earns no points, and your instructor sees it flagged.
    """
    work = _work_dtype(q)
    scores = scaled_scores(q.to(work), k.to(work), scale)
    L, S = scores.shape[-2:]
    causal = causal_mask(L, S, device=q.device) if is_causal else None
    visible = _and_masks(mask, causal)

    weights = torch.softmax(apply_mask(scores, visible), dim=-1)
    if visible is not None:
        # rows without any visible key came out uniform: silence them completely
        weights = torch.where(visible, weights, weights.new_zeros(()))
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p, training=True)

    output = torch.einsum("...ls,...sv->...lv", weights, v.to(work))
    return output.to(q.dtype), weights.to(q.dtype)
