"""Part 2: masks, and attention weights that respect them.

Convention, as in torch.nn.functional.scaled_dot_product_attention:
a boolean mask is True where a query MAY attend to a key, False where it may not.
Shapes are in the type hints (see scaling.py): "... L S" ends in L queries and S keys.
"""
# I write every if/else out in full on purpose, so the linter's "use a ternary" hint is switched off.
# ruff: noqa: SIM108
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
    # If S was not given, the mask is square
    if S is None:
        number_of_keys = L
    else:
        number_of_keys = S
    # The number of queries is L
    number_of_queries = L

    # Negative sizes make no sense
    if number_of_queries < 0:
        raise ValueError(f"L must be zero or more, but got L={number_of_queries}")
    if number_of_keys < 0:
        raise ValueError(f"S must be zero or more, but got S={number_of_keys}")

    # The position of every query, as a column: shape (L, 1)
    query_positions = torch.arange(number_of_queries, device=device).reshape(number_of_queries, 1)
    # The position of every key, as a row: shape (1, S)
    key_positions = torch.arange(number_of_keys, device=device).reshape(1, number_of_keys)
    # Query i may see key j exactly when j <= i (top-left aligned); broadcasting gives (L, S)
    causal_boolean_mask = key_positions <= query_positions
    # Return the (L, S) boolean mask
    return causal_boolean_mask


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
    # Turn the lengths into a 1-D integer tensor on the right device
    if isinstance(lengths, torch.Tensor):
        # When no device was asked for, use the device the lengths tensor lives on
        if device is None:
            target_device = lengths.device
        else:
            target_device = device
        # Move (or keep) the lengths on that device, as 64-bit integers
        lengths_tensor = lengths.to(device=target_device, dtype=torch.long)
    else:
        # A plain Python sequence: use the given device (None means torch's default)
        target_device = device
        # Build a tensor from the list of ints
        lengths_tensor = torch.tensor(list(lengths), dtype=torch.long, device=target_device)

    # The lengths must be one number per sequence, so a 1-D tensor
    if lengths_tensor.dim() != 1:
        raise ValueError(f"lengths must be 1-D (one length per sequence), but got shape {tuple(lengths_tensor.shape)}")

    # Work out the padded length
    if max_len is None:
        # Nothing to take the maximum of when the batch is empty
        if lengths_tensor.numel() == 0:
            padded_length = 0
        else:
            # The longest sequence decides the padded length
            padded_length = int(lengths_tensor.max())
    else:
        # The caller chose the padded length
        padded_length = max_len

    # A negative padded length is not possible
    if padded_length < 0:
        raise ValueError(f"max_len must be zero or more, but got max_len={padded_length}")

    # The position of every token, as a row: shape (1, max_len)
    token_positions = torch.arange(padded_length, device=lengths_tensor.device).reshape(1, padded_length)
    # The length of every sequence, as a column: shape (B, 1)
    lengths_column = lengths_tensor.reshape(-1, 1)
    # A token is real when its position is before the sequence's length; broadcasting gives (B, max_len)
    real_token_mask = token_positions < lengths_column
    # Return the (B, max_len) boolean mask
    return real_token_mask


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
    # No mask means nothing to hide: give the scores back unchanged
    if mask is None:
        return scores

    # Make sure the mask is boolean (True = keep), without touching the original
    if mask.dtype == torch.bool:
        # Already boolean, use it as it is
        boolean_keep_mask = mask
    else:
        # Anything non-zero counts as "keep"
        boolean_keep_mask = mask != 0

    # Move the mask to the device of the scores if it lives somewhere else
    boolean_keep_mask = boolean_keep_mask.to(scores.device)

    # The positions to hide are the ones where the mask is False
    hide_these_positions = torch.logical_not(boolean_keep_mask)
    # Minus infinity: softmax turns it into exactly 0, and it fits in every float dtype
    hidden_value = float("-inf")
    # masked_fill (not masked_fill_) returns a NEW tensor, so the scores are not changed in place
    masked_scores = scores.masked_fill(hide_these_positions, hidden_value)
    # Return the masked scores, same dtype and device as the input scores
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
    # Every input needs at least the two last dims
    if q.dim() < 2:
        raise ValueError(f"q must have shape (..., L, E), but got shape {tuple(q.shape)}")
    if k.dim() < 2:
        raise ValueError(f"k must have shape (..., S, E), but got shape {tuple(k.shape)}")
    if v.dim() < 2:
        raise ValueError(f"v must have shape (..., S, Ev), but got shape {tuple(v.shape)}")
    # Keys and values come in pairs, so they need the same number of rows S
    if k.size(-2) != v.size(-2):
        raise ValueError(f"k and v must have the same number of keys S, but k has {k.size(-2)} and v has {v.size(-2)}")
    # The dropout probability must be a probability
    if dropout_p < 0.0 or dropout_p > 1.0:
        raise ValueError(f"dropout_p must be between 0 and 1, but got dropout_p={dropout_p}")

    # Remember the dtype of q: output and weights are returned in it
    output_dtype = q.dtype
    # Half precision types are computed in float32; float32 and float64 stay as they are
    if output_dtype == torch.float16 or output_dtype == torch.bfloat16:
        working_dtype = torch.float32
    else:
        working_dtype = output_dtype

    # Bring the three inputs to the working dtype (new tensors if needed, the inputs stay untouched)
    queries = q.to(working_dtype)
    keys = k.to(working_dtype)
    values = v.to(working_dtype)

    # Step 1: the scaled scores, shape (..., L, S)
    scores = scaled_scores(queries, keys, scale)
    # The number of queries and keys, read from the scores
    number_of_queries = scores.size(-2)
    number_of_keys = scores.size(-1)

    # Step 2: build the mask that says which keys every query may see
    if mask is None:
        # No mask from the caller (yet)
        user_mask = None
    else:
        # Make the caller's mask boolean without changing it
        if mask.dtype == torch.bool:
            user_mask = mask.to(scores.device)
        else:
            user_mask = (mask != 0).to(scores.device)

    if is_causal:
        # The causal mask for these sizes, on the device of the scores
        the_causal_mask = causal_mask(number_of_queries, number_of_keys, device=scores.device)
        if user_mask is None:
            # Only the causal mask
            combined_mask = the_causal_mask
        else:
            # A key is visible only when both masks allow it (logical and)
            combined_mask = torch.logical_and(user_mask, the_causal_mask)
    else:
        # No causal mask: the caller's mask (or None) is all there is
        combined_mask = user_mask

    # Step 3: hide the masked-out scores and take the softmax
    if combined_mask is None:
        # Nothing to hide: a plain softmax over the keys
        attention_weights = F.softmax(scores, dim=-1)
    else:
        # Put -inf where the mask is False
        masked_scores = apply_mask(scores, combined_mask)
        # For every query row: does it see at least one key? shape (..., L, 1) after broadcasting
        row_sees_some_key = combined_mask.any(dim=-1, keepdim=True)
        # A row with no visible key would be all -inf, and softmax would give NaN;
        # so in those rows I use zeros instead (softmax is then finite) and zero the weights afterwards
        safe_scores = torch.where(row_sees_some_key, masked_scores, torch.zeros_like(masked_scores))
        # The softmax over the keys
        softmax_of_safe_scores = F.softmax(safe_scores, dim=-1)
        # Rows that see no key get all-zero weights, as torch's SDPA does
        attention_weights = torch.where(row_sees_some_key, softmax_of_safe_scores,
                                        torch.zeros_like(softmax_of_safe_scores))

    # Step 4: dropout on the weights, only when asked for
    if dropout_p > 0.0:
        # F.dropout zeroes weights with probability dropout_p and divides the others by (1 - dropout_p)
        weights_used = F.dropout(attention_weights, p=dropout_p, training=True)
    else:
        # No dropout: the weights are used as they are
        weights_used = attention_weights

    # Step 5: the weighted sum of the values: (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
    attention_output = torch.matmul(weights_used, values)

    # Cast both results back to the dtype of q
    output_in_output_dtype = attention_output.to(output_dtype)
    weights_in_output_dtype = weights_used.to(output_dtype)
    # Return the pair (output, weights)
    return output_in_output_dtype, weights_in_output_dtype
