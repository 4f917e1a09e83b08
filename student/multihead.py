"""Part 5: multi-head self- and cross-attention. Part 6: the same through PyTorch's fused SDPA."""
import torch
import torch.nn.functional as F
from torch import nn

from .heads import merge_heads, split_heads
from .masking import causal_mask, scaled_dot_product_attention
from .padding import expand_padding_mask


class MultiHeadAttention(nn.Module):
    """Multi-head attention with optional cross-attention, padding and causal masks.

    Parameters are exactly four nn.Linear(embed_dim, embed_dim, bias=bias) named
    q_proj, k_proj, v_proj and out_proj, and nothing else.
    """

    def __init__(self, embed_dim: int, num_heads: int, *, bias: bool = True, dropout: float = 0.0, fused: bool = False):
        """Create the four projections.

        Args:
            embed_dim: E, the model width (queries, keys, values and output).
            num_heads: H; must divide E (each head works on D = E // H features).
            bias: whether the four projections have a bias.
            dropout: probability of dropping attention weights, in training mode only.
            fused: False computes attention with this package's own
                scaled_dot_product_attention (Part 5); True calls
                torch.nn.functional.scaled_dot_product_attention (Part 6).

        Raises:
            ValueError when embed_dim % num_heads != 0.
        """
        super().__init__()
        raise NotImplementedError("Part 5: MultiHeadAttention.__init__ is not implemented yet")

    def forward(self, x: torch.Tensor, context: torch.Tensor | None = None, padding_mask: torch.Tensor | None = None, is_causal: bool = False) -> torch.Tensor:
        """Attend from x to itself (self-attention) or to context (cross-attention).

        Args:
            x: (B, L, E); gives the queries.
            context: None for self-attention, or (B, S, E) for cross-attention:
                keys and values come from it instead of x.
            padding_mask: None or bool (B, S), True for the real tokens of the
                key/value sequence (x or context); padded keys get no attention.
            is_causal: each query sees only keys at or before its position.
                Only meaningful for self-attention.

        Returns:
            (B, L, E) = out_proj(merge_heads(attention over the H heads)).

        Raises:
            ValueError when is_causal is True and context is given.

        Dropout of the attention weights happens only in training mode
        (self.training), with probability `dropout`. With fused=True the
        attention itself must go through self._fused_attention.
        """
        raise NotImplementedError("Part 5: MultiHeadAttention.forward is not implemented yet")

    def _fused_attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, is_causal: bool, dropout_p: float) -> torch.Tensor:
        """Part 6: the attention step through torch.nn.functional.scaled_dot_product_attention.

        Args:
            q (B, H, L, D), k and v (B, H, S, D): the heads, already split.
            mask: None or bool (B, 1, L, S), True = may attend (from expand_padding_mask).
            is_causal: hide the keys after each query.
            dropout_p: dropout probability to apply now (0.0 outside training).

        Returns:
            (B, H, L, D), equal (up to rounding) to the output of this package's
            scaled_dot_product_attention on the same inputs.

        Hint: read the documentation of F.scaled_dot_product_attention for what
        its attn_mask means and for what happens when you pass both attn_mask
        and is_causal: not every backend accepts both.
        """
        raise NotImplementedError("Part 6: MultiHeadAttention._fused_attention is not implemented yet")
