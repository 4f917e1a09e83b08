"""Correct solutions written differently from the reference. Every one must score exactly 100."""
from autograder.samples import reference_source
from autograder.zoo import Sample, edit

SOFTMAX = "    weights = torch.softmax(apply_mask(scores, mask), dim=-1)"
ZERO_ROWS = "        weights = torch.where(has_visible_key, weights, torch.zeros_like(weights))"
MANUAL = "            heads, _ = scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal, dropout_p=dropout_p)"
FUSED = "        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=is_causal)"


def _view_permute_heads() -> Sample:
    text = reference_source("heads.py")
    text = text.replace("    return x.reshape(B, L, num_heads, E // num_heads).transpose(1, 2)",
                        "    return x.view(B, L, num_heads, E // num_heads).permute(0, 2, 1, 3)")
    text = text.replace("    return x.transpose(1, 2).reshape(B, L, H * D)",
                        "    return x.permute(0, 2, 1, 3).contiguous().view(B, L, H * D)")
    assert text.count("view(") == 2
    return Sample("view-permute-heads", None, {"heads.py": text})


VARIANTS = [
    edit("einsum-scores", None, "scaling.py", "    return torch.matmul(q, k.transpose(-2, -1)) * scale",
         '    return torch.einsum("...le,...se->...ls", q, k) * scale'),
    edit("scale-q-first", None, "scaling.py", "    return torch.matmul(q, k.transpose(-2, -1)) * scale",
         "    return (q * scale) @ k.transpose(-2, -1)"),
    _view_permute_heads(),
    edit("finfo-min-fill", None, "masking.py", 'scores.masked_fill(~mask, float("-inf"))',
         "scores.masked_fill(~mask, torch.finfo(scores.dtype).min)"),
    edit("where-fill", None, "masking.py", 'scores.masked_fill(~mask, float("-inf"))',
         'torch.where(mask, scores, torch.full((), float("-inf"), dtype=scores.dtype, device=scores.device))'),
    edit("causal-from-triu", None, "masking.py", "torch.ones(L, S, dtype=torch.bool, device=device).tril()",
         "~torch.ones(L, S, dtype=torch.bool, device=device).triu(1)"),
    edit("hand-written-stable-softmax", None, "masking.py", SOFTMAX,
         "    masked = apply_mask(scores, mask)\n"
         "    shifted = (masked - masked.amax(dim=-1, keepdim=True)).exp()\n"
         "    weights = shifted / shifted.sum(dim=-1, keepdim=True)"),
    edit("nan-to-num-for-empty-rows", None, "masking.py", ZERO_ROWS, "        weights = torch.nan_to_num(weights, nan=0.0)"),
    edit("bernoulli-dropout", None, "masking.py", "        weights = F.dropout(weights, p=dropout_p, training=True)",
         "        keep = torch.rand(weights.shape, device=weights.device) >= dropout_p\n"
         "        weights = weights * keep / (1 - dropout_p)"),
    edit("materialised-expanded-mask", None, "padding.py", "    return mask[:, None, None, :].expand(B, 1, num_queries, S)",
         "    return mask.reshape(B, 1, 1, S).repeat(1, 1, num_queries, 1)"),
    edit("loop-over-heads", None, "multihead.py", MANUAL,
         "            heads = torch.stack([scaled_dot_product_attention(\n"
         "                q[:, h], k[:, h], v[:, h], None if mask is None else mask[:, 0],\n"
         "                is_causal=is_causal, dropout_p=dropout_p)[0] for h in range(self.num_heads)], dim=1)"),
    edit("fused-float-additive-mask", None, "multihead.py", FUSED,
         "        if mask is not None:\n"
         "            mask = torch.zeros(mask.shape, dtype=q.dtype, device=q.device).masked_fill(~mask, float('-inf'))\n"
         + FUSED),
]
