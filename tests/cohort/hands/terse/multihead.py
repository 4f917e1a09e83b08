"""Part 5: multi-head self- and cross-attention. Part 6: the same through PyTorch's fused SDPA.

Shapes are in the type hints (see scaling.py): B batch, L queries, S keys and values, E = embed_dim
features, H heads of D = E // H features each.
"""
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
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim={embed_dim} is not divisible by num_heads={num_heads}")
        self.num_heads, self.dropout, self.fused = num_heads, dropout, fused
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (
            nn.Linear(embed_dim, embed_dim, bias=bias) for _ in range(4))

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
        if is_causal and context is not None:
            raise ValueError("is_causal only applies to self-attention, not with a context")
        kv = x if context is None else context
        q, k, v = (split_heads(proj(t), self.num_heads)
                   for proj, t in ((self.q_proj, x), (self.k_proj, kv), (self.v_proj, kv)))
        mask = None if padding_mask is None else expand_padding_mask(padding_mask, x.size(1))
        p = self.dropout if self.training else 0.0
        out = (self._fused_attention(q, k, v, mask, is_causal, p) if self.fused
               else scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal, dropout_p=p)[0])
        return self.out_proj(merge_heads(out))

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
        m = mask & causal_mask(q.size(-2), k.size(-2), device=q.device) if is_causal and mask is not None else mask
        # SDPA gives NaN (or junk) for rows that see nothing: let them see everything, then zero them
        vis = None if m is None else m.any(-1, keepdim=True)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=None if m is None else m | ~vis,
                                             dropout_p=dropout_p, is_causal=is_causal and m is None)
        return out if vis is None else out * vis
