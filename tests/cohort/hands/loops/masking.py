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
    if S is None:
        S = L
    row_index = torch.arange(L, device=device).unsqueeze(1)
    col_index = torch.arange(S, device=device).unsqueeze(0)
    mask = col_index <= row_index
    return mask


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
    if isinstance(lengths, torch.Tensor):
        if device is None:
            device = lengths.device
        length_tensor = lengths.to(device=device, dtype=torch.long)
    else:
        length_tensor = torch.tensor(list(lengths), dtype=torch.long, device=device)
    if max_len is None:
        max_len = 0 if length_tensor.numel() == 0 else int(length_tensor.max())
    positions = torch.arange(max_len, device=length_tensor.device).unsqueeze(0)
    limits = length_tensor.reshape(-1).unsqueeze(1)
    mask = positions < limits
    return mask


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
    keep = mask.to(device=scores.device, dtype=torch.bool)
    hide = torch.logical_not(keep)
    masked_scores = scores.masked_fill(hide, float("-inf"))
    return masked_scores


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
    out_dtype = q.dtype
    work_dtype = _working_dtype(q.dtype)
    q_work = q.to(work_dtype)
    k_work = k.to(work_dtype)
    v_work = v.to(work_dtype)

    scores = scaled_scores(q_work, k_work, scale=scale)

    num_queries = scores.size(-2)
    num_keys = scores.size(-1)
    visible = None
    if mask is not None:
        visible = mask.to(device=scores.device, dtype=torch.bool)
    if is_causal:
        causal = causal_mask(num_queries, num_keys, device=scores.device)
        visible = causal if visible is None else torch.logical_and(visible, causal)

    masked_scores = apply_mask(scores, visible)
    weights = _stable_softmax(masked_scores)

    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p, training=True)

    output = torch.matmul(weights, v_work)
    return output.to(out_dtype), weights.to(out_dtype)


def _working_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype to do the arithmetic in: half types go up to float32, the rest stay."""
    if dtype == torch.float16 or dtype == torch.bfloat16:
        return torch.float32
    return dtype


def _stable_softmax(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim, written out; a row of only -inf gives all zeros."""
    row_max = scores.amax(dim=-1, keepdim=True)
    finite_max = torch.isfinite(row_max)
    zero = torch.zeros_like(row_max)
    row_max = torch.where(finite_max, row_max, zero)
    shifted = scores - row_max
    exps = torch.exp(shifted)
    row_sum = exps.sum(dim=-1, keepdim=True)
    has_mass = row_sum > 0
    one = torch.ones_like(row_sum)
    safe_sum = torch.where(has_mass, row_sum, one)
    weights = exps / safe_sum
    return weights
