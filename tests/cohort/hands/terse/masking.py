"""Part 2: masks, and attention weights that respect them.

Convention, as in torch.nn.functional.scaled_dot_product_attention:
a boolean mask is True where a query MAY attend to a key, False where it may not.
Shapes are in the type hints (see scaling.py): "... L S" ends in L queries and S keys.
"""
from collections.abc import Sequence
from typing import Annotated

import torch
import torch.nn.functional as F

from .scaling import scaled_scores


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
    return torch.arange(L if S is None else S, device=device) <= torch.arange(L, device=device)[:, None]


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
    lens = lengths.to(device or lengths.device) if torch.is_tensor(lengths) else torch.tensor(lengths, device=device)
    n = (int(lens.max()) if lens.numel() else 0) if max_len is None else max_len
    return torch.arange(n, device=lens.device) < lens[:, None]


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
    return scores if mask is None else scores.masked_fill(~mask, torch.finfo(scores.dtype).min)


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
    ct = torch.promote_types(q.dtype, torch.float32)
    cm = causal_mask(q.size(-2), k.size(-2), device=q.device) if is_causal else None
    mask = cm if mask is None else mask if cm is None else mask & cm
    w = F.softmax(apply_mask(scaled_scores(q.to(ct), k.to(ct), scale), mask), dim=-1)
    # rows with no visible key softmax to uniform junk: the mask multiplies them (and the hidden keys) to 0
    w = w if mask is None else w * mask
    w = F.dropout(w, dropout_p) if dropout_p > 0 else w
    return (w @ v.to(ct)).to(q.dtype), w.to(q.dtype)
