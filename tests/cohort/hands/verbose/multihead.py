"""Part 5: multi-head self- and cross-attention. Part 6: the same through PyTorch's fused SDPA.

Shapes are in the type hints (see scaling.py): B batch, L queries, S keys and values, E = embed_dim
features, H heads of D = E // H features each.
"""
# I write every if/else out in full on purpose, so the linter's "use a ternary" hint is switched off.
# ruff: noqa: SIM108
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import nn

from .heads import merge_heads, split_heads
from .masking import causal_mask, scaled_dot_product_attention
from .padding import expand_padding_mask


class MultiHeadAttention(nn.Module):
    """Multi-head attention with optional cross-attention, padding and causal masks.

    Parameters are exactly four nn.Linear(embed_dim, embed_dim, bias=bias) named
    q_proj, k_proj, v_proj and out_proj, and nothing else. The grader loads its
    own weights into them with load_state_dict(strict=True), so the module has
    no other parameter and no persistent buffer (a cached mask needs
    register_buffer(..., persistent=False)).
    """

    def __init__(self, embed_dim: int, num_heads: int, *, bias: bool = True, dropout: float = 0.0,
                 fused: bool = False):
        """Create the four projections.

        Args:
            embed_dim: E, the model width (queries, keys, values and output).
            num_heads: H; must divide E (each head works on D = E // H features).
            bias: whether the four projections have a bias.
            dropout: probability of dropping attention weights, in training mode only.
            fused: False computes attention with this package's own
                scaled_dot_product_attention (Part 5); True calls
                torch.nn.functional.scaled_dot_product_attention (Part 6).
                Both create the same four projections.

        Raises:
            ValueError when embed_dim % num_heads != 0, and only then.
        """
        super().__init__()
        # The model width must be a positive number
        if embed_dim <= 0:
            raise ValueError(f"embed_dim must be positive, but got embed_dim={embed_dim}")
        # There must be at least one head
        if num_heads <= 0:
            raise ValueError(f"num_heads must be positive, but got num_heads={num_heads}")
        # Every head gets the same number of features, so num_heads must divide embed_dim
        if embed_dim % num_heads != 0:
            raise ValueError(f"embed_dim={embed_dim} is not divisible by num_heads={num_heads}")
        # The dropout probability must be a probability
        if dropout < 0.0 or dropout > 1.0:
            raise ValueError(f"dropout must be between 0 and 1, but got dropout={dropout}")

        # Remember the sizes for forward
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        # The number of features of every head
        self.head_dim = embed_dim // num_heads
        # The attention dropout probability (used in training mode only)
        self.dropout = dropout
        # Which attention to use: my own (False) or torch's fused SDPA (True)
        self.fused = fused

        # The projection that makes the queries
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        # The projection that makes the keys
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        # The projection that makes the values
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        # The projection applied to the merged heads at the end
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(
        self,
        x: Annotated[torch.Tensor, "B L E"],
        context: Annotated[torch.Tensor, "B S E"] | None = None,
        padding_mask: Annotated[torch.Tensor, "B S"] | None = None,
        is_causal: bool = False,
    ) -> Annotated[torch.Tensor, "B L E"]:
        """Attend from x to itself (self-attention) or to context (cross-attention).

        Args:
            x: (B, L, E); gives the queries.
            context: None for self-attention, or (B, S, E) for cross-attention:
                keys and values come from it instead of x.
            padding_mask: None or bool (B, S), True for the real tokens of the
                key/value sequence (x or context); padded keys get no attention.
                A query with no real key at all gets all-zero attention weights,
                never NaN.
            is_causal: each query sees only keys at or before its position.
                Only meaningful for self-attention.

        Returns:
            (B, L, E) = out_proj(merge_heads(attention over the H heads)), where
            each head attends with scale 1/sqrt(D), D = E // H its own number of
            features (not 1/sqrt(E)).

        Raises:
            ValueError when is_causal is True and context is given, and only then.

        Dropout of the attention weights happens only in training mode
        (self.training), with probability `dropout`.

        The manual path (fused=False) must not call
        torch.nn.functional.scaled_dot_product_attention, F.multi_head_attention_forward or
        nn.MultiheadAttention; with fused=True the attention itself must go through
        self._fused_attention, which calls torch.nn.functional.scaled_dot_product_attention.
        A hidden test during which a path breaks this earns no points, and your
        instructor sees it flagged.

        Rules (the grader checks each one):
            - Works in float16, bfloat16, float32 and float64 (after module.to(dtype));
              the output has the dtype of x and lives on the device of x.
            - float64 is computed in float64 all the way; float16 and bfloat16
              may be computed in float32 and cast back.
            - Autograd works: gradients reach x, context and all four projections.
            - x, context and padding_mask are never modified in place.
        """
        # Causal masking only makes sense when queries and keys are the same sequence
        if is_causal and context is not None:
            raise ValueError("is_causal=True cannot be used with a context (cross-attention)")

        # The queries' input has to be (B, L, E)
        if x.dim() != 3:
            raise ValueError(f"x must have shape (B, L, E), but got shape {tuple(x.shape)}")
        # Its last dim must be the model width
        if x.size(-1) != self.embed_dim:
            raise ValueError(f"x must have {self.embed_dim} features, but it has {x.size(-1)}")

        # Pick the sequence the keys and values come from
        if context is None:
            # Self-attention: keys and values come from x itself
            key_value_source = x
        else:
            # Cross-attention: the context has to be (B, S, E) with the same batch size and width
            if context.dim() != 3:
                raise ValueError(f"context must have shape (B, S, E), but got shape {tuple(context.shape)}")
            if context.size(0) != x.size(0):
                raise ValueError(f"context has batch size {context.size(0)} but x has batch size {x.size(0)}")
            if context.size(-1) != self.embed_dim:
                raise ValueError(f"context must have {self.embed_dim} features, but it has {context.size(-1)}")
            key_value_source = context

        # The sizes I need below
        batch_size = x.size(0)
        number_of_queries = x.size(1)
        number_of_keys = key_value_source.size(1)

        # Project the inputs: queries from x, keys and values from the source; each (B, *, E)
        projected_queries = self.q_proj(x)
        projected_keys = self.k_proj(key_value_source)
        projected_values = self.v_proj(key_value_source)

        # Cut every projection into heads: (B, *, E) -> (B, H, *, D)
        query_heads = split_heads(projected_queries, self.num_heads)
        key_heads = split_heads(projected_keys, self.num_heads)
        value_heads = split_heads(projected_values, self.num_heads)

        # Build the attention mask from the padding mask, if there is one
        if padding_mask is None:
            # No padding: no mask
            attention_mask = None
        else:
            # The padding mask must say, for every batch element, which of the S keys are real
            expected_shape = (batch_size, number_of_keys)
            if tuple(padding_mask.shape) != expected_shape:
                raise ValueError(
                    f"padding_mask must have shape (B, S) = {expected_shape}, but got shape {tuple(padding_mask.shape)}"
                )
            # Put the mask on the device of the queries
            padding_mask_on_device = padding_mask.to(query_heads.device)
            # (B, S) -> (B, 1, L, S), which broadcasts over the heads
            attention_mask = expand_padding_mask(padding_mask_on_device, number_of_queries)

        # Dropout only while training
        if self.training:
            attention_dropout_probability = self.dropout
        else:
            attention_dropout_probability = 0.0

        # The attention itself, per head; the default scale is 1/sqrt(D) because the heads have D features
        if self.fused:
            # Part 6: through torch's fused scaled_dot_product_attention
            attended_heads = self._fused_attention(
                query_heads, key_heads, value_heads, attention_mask, is_causal, attention_dropout_probability
            )
        else:
            # Part 5: through my own scaled_dot_product_attention (it returns output and weights)
            attended_heads, _attention_weights = scaled_dot_product_attention(
                query_heads,
                key_heads,
                value_heads,
                attention_mask,
                is_causal=is_causal,
                dropout_p=attention_dropout_probability,
            )

        # Glue the heads back together: (B, H, L, D) -> (B, L, E)
        merged_heads = merge_heads(attended_heads)
        # The final output projection
        final_output = self.out_proj(merged_heads)
        # Make sure the output has the dtype of x
        final_output_in_x_dtype = final_output.to(x.dtype)
        # Return (B, L, E)
        return final_output_in_x_dtype

    def _fused_attention(
        self,
        q: Annotated[torch.Tensor, "B H L D"],
        k: Annotated[torch.Tensor, "B H S D"],
        v: Annotated[torch.Tensor, "B H S D"],
        mask: Annotated[torch.Tensor, "B 1 L S"] | None,
        is_causal: bool,
        dropout_p: float,
    ) -> Annotated[torch.Tensor, "B H L D"]:
        """Part 6: the attention step through torch.nn.functional.scaled_dot_product_attention.

        Args:
            q (B, H, L, D), k and v (B, H, S, D): the heads, already split.
            mask: None or bool (B, 1, L, S), True = may attend (from expand_padding_mask).
            is_causal: hide the keys after each query.
            dropout_p: dropout probability to apply now (0.0 outside training).

        Returns:
            (B, H, L, D), equal (up to rounding) to the output of this package's
            scaled_dot_product_attention on the same inputs.

        It must work whichever SDPA backend torch picks: the grader also runs it
        with SDPA restricted to its math backend, which refuses an attn_mask
        together with is_causal=True. Read the documentation of
        F.scaled_dot_product_attention for what its attn_mask means.
        """
        # The number of queries and keys
        number_of_queries = q.size(-2)
        number_of_keys = k.size(-2)

        # Work out the one boolean mask to hand to torch (the math backend refuses attn_mask with is_causal)
        if mask is None and not is_causal:
            # No masking at all
            combined_mask = None
        elif mask is None and is_causal:
            # Only causal: build the causal mask myself so every backend gets the same kind of input
            combined_mask = causal_mask(number_of_queries, number_of_keys, device=q.device)
        elif mask is not None and not is_causal:
            # Only the padding mask; make sure it is boolean (True = may attend, as torch expects)
            if mask.dtype == torch.bool:
                combined_mask = mask.to(q.device)
            else:
                combined_mask = (mask != 0).to(q.device)
        else:
            # Both: a key is visible only when the padding mask and the causal mask both allow it
            if mask.dtype == torch.bool:
                boolean_padding_mask = mask.to(q.device)
            else:
                boolean_padding_mask = (mask != 0).to(q.device)
            the_causal_mask = causal_mask(number_of_queries, number_of_keys, device=q.device)
            combined_mask = torch.logical_and(boolean_padding_mask, the_causal_mask)

        # Without any mask, call torch directly
        if combined_mask is None:
            fused_output = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=dropout_p,
                                                          is_causal=False)
            return fused_output

        # For every query row: does it see at least one key? shape (..., L, 1)
        row_sees_some_key = combined_mask.any(dim=-1, keepdim=True)
        # Rows with no visible key could give NaN in some backends, so I let them see every key for now
        # (a finite result) and set their output to zero afterwards, as my own attention does
        safe_mask = torch.logical_or(combined_mask, torch.logical_not(row_sees_some_key))
        # torch's fused attention with a boolean mask (True = may attend)
        fused_output = F.scaled_dot_product_attention(q, k, v, attn_mask=safe_mask, dropout_p=dropout_p,
                                                      is_causal=False)
        # Zero the output of the rows that see no key at all
        zero_output = torch.zeros_like(fused_output)
        final_output = torch.where(row_sees_some_key, fused_output, zero_output)
        # Return (B, H, L, D)
        return final_output
