"""Realistic wrong submissions, each with the part its bug lives in. Every one must lose points there."""
from autograder.zoo import edit

SCALE = "        scale = q.size(-1) ** -0.5"
SCORES = "    return torch.matmul(q, k.transpose(-2, -1)) * scale"
CAUSAL = "    return torch.ones(L, S, dtype=torch.bool, device=device).tril()"
PADDING = "    return positions.unsqueeze(0) < lengths.unsqueeze(1)"
FILL = '    return scores.masked_fill(~mask, float("-inf"))'
SOFTMAX = "    weights = torch.softmax(apply_mask(scores, mask), dim=-1)"
COMBINE = "        mask = causal if mask is None else mask & causal"
ZERO_ROWS = "        weights = torch.where(has_visible_key, weights, torch.zeros_like(weights))"
DROPOUT = "        weights = F.dropout(weights, p=dropout_p, training=True)"
RETURN = "    return weights @ v, weights"
SPLIT = "    return x.reshape(B, L, num_heads, E // num_heads).transpose(1, 2)"
MERGE = "    return x.transpose(1, 2).reshape(B, L, H * D)"
EXPAND = "    return mask[:, None, None, :].expand(B, 1, num_queries, S)"
PROJECTIONS = ("        q = split_heads(self.q_proj(x), self.num_heads)\n"
               "        k = split_heads(self.k_proj(source), self.num_heads)\n"
               "        v = split_heads(self.v_proj(source), self.num_heads)\n")
MHA_MASK = "        mask = None if padding_mask is None else expand_padding_mask(padding_mask, x.size(1))"
MHA_DROPOUT = "        dropout_p = self.dropout if self.training else 0.0"
MANUAL = "            heads, _ = scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal, dropout_p=dropout_p)"
FUSED = "        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=is_causal)"
FOLD = ("        if is_causal and mask is not None:\n"
        "            # Not every SDPA backend takes attn_mask together with is_causal: fold them into one mask.\n"
        "            mask = mask & causal_mask(q.size(-2), k.size(-2), device=q.device)\n"
        "            is_causal = False\n")

BUGS = [
    # Part 1: scaled_scores
    edit("no-scale", 1, "scaling.py", SCALE, "        scale = 1.0", "forgot to scale"),
    edit("scale-by-E", 1, "scaling.py", SCALE, "        scale = 1.0 / q.size(-1)", "divides by E, not sqrt(E)"),
    edit("times-sqrt-E", 1, "scaling.py", SCALE, "        scale = q.size(-1) ** 0.5", "multiplies by sqrt(E)"),
    edit("scale-from-keys", 1, "scaling.py", SCALE, "        scale = k.size(-2) ** -0.5", "sqrt(S) instead of sqrt(E)"),
    edit("ignores-scale-argument", 1, "scaling.py", "    if scale is None:\n" + SCALE, "    scale = q.size(-1) ** -0.5"),
    edit("k.T-for-batches", 1, "scaling.py", SCORES, "    return torch.matmul(q, k.T) * scale", "k.T reverses every dim"),
    edit("detached-scores", 1, "scaling.py", SCORES, "    return (torch.matmul(q, k.transpose(-2, -1)) * scale).detach()"),
    edit("float-cast", 1, "scaling.py", SCORES, "    return torch.matmul(q.float(), k.float().transpose(-2, -1)) * scale"),
    edit("scales-q-in-place", 1, "scaling.py", SCORES, "    return torch.matmul(q.mul_(scale), k.transpose(-2, -1))"),
    # Part 2: masks and attention
    edit("causal-triu", 2, "masking.py", CAUSAL, CAUSAL.replace(".tril()", ".triu()")),
    edit("causal-hides-diagonal", 2, "masking.py", CAUSAL, CAUSAL.replace(".tril()", ".tril(-1)")),
    edit("causal-mask-on-default-device", 2, "masking.py", CAUSAL, CAUSAL.replace(", device=device", "")),
    edit("padding-off-by-one", 2, "masking.py", PADDING, PADDING.replace("<", "<=")),
    edit("padding-inverted", 2, "masking.py", PADDING, PADDING.replace("<", ">=")),
    edit("padding-ignores-max-len", 2, "masking.py", "    if max_len is None:\n        max_len =", "    if True:\n        max_len ="),
    edit("fill-minus-1e9", 2, "masking.py", FILL, FILL.replace('float("-inf")', "-1e9"), "overflows float16"),
    edit("apply-mask-inverted", 2, "masking.py", FILL, FILL.replace("~mask", "mask")),
    edit("apply-mask-in-place", 2, "masking.py", FILL, FILL.replace("masked_fill(", "masked_fill_(")),
    edit("softmax-over-queries", 2, "masking.py", SOFTMAX, SOFTMAX.replace("dim=-1", "dim=-2")),
    edit("mask-after-softmax", 2, "masking.py", SOFTMAX,
         "    weights = torch.softmax(scores, dim=-1)\n    if mask is not None:\n"
         "        weights = weights.masked_fill(~mask, 0.0)"),
    edit("is-causal-ignored-with-mask", 2, "masking.py", COMBINE, "        mask = causal if mask is None else mask"),
    edit("nan-on-fully-masked-rows", 2, "masking.py", ZERO_ROWS, "        pass"),
    edit("dropout-without-rescale", 2, "masking.py", DROPOUT, DROPOUT + " * (1 - dropout_p)"),
    edit("dropout-keep-probability", 2, "masking.py", DROPOUT, DROPOUT.replace("p=dropout_p", "p=1 - dropout_p")),
    edit("torch-sdpa-in-manual-path", 2, "masking.py", RETURN,
         "    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale), weights"),
    edit("float32-softmax", 2, "masking.py", SOFTMAX, SOFTMAX.replace("dim=-1)", "dim=-1, dtype=torch.float32)")),
    edit("detached-weights", 2, "masking.py", RETURN, "    return weights.detach() @ v, weights.detach()"),
    # Part 3: heads
    edit("split-without-transpose", 3, "heads.py", SPLIT, "    return x.reshape(B, num_heads, L, E // num_heads)"),
    edit("split-interleaved", 3, "heads.py", SPLIT, "    return x.reshape(B, L, E // num_heads, num_heads).permute(0, 3, 1, 2)"),
    edit("merge-without-transpose", 3, "heads.py", MERGE, "    return x.reshape(B, L, H * D)"),
    edit("split-no-value-error", 3, "heads.py",
         '    if E % num_heads != 0:\n        raise ValueError(f"embedding size E={E} is not divisible by num_heads={num_heads}")\n', ""),
    edit("split-vague-value-error", 3, "heads.py", 'f"embedding size E={E} is not divisible by num_heads={num_heads}"',
         '"bad head count"'),
    # Part 4: padding-mask expansion
    edit("expand-transposed", 4, "padding.py", EXPAND, "    return mask[:, None, :, None].expand(B, 1, S, num_queries)"),
    edit("expand-inverted", 4, "padding.py", EXPAND, EXPAND.replace("mask[", "(~mask)[")),
    edit("expand-wrong-repeat", 4, "padding.py", EXPAND, "    return mask.repeat(num_queries, 1).reshape(B, 1, num_queries, S)"),
    edit("expand-masks-queries-too", 4, "padding.py", EXPAND,
         "    return (mask[:, None, None, :] & mask[:, None, :num_queries, None]).expand(B, 1, num_queries, S)"),
    # Part 5: MultiHeadAttention, manual path
    edit("scale-by-model-dim", 5, "multihead.py", MANUAL, MANUAL.replace("dropout_p=dropout_p)", "dropout_p=dropout_p, scale=self.embed_dim ** -0.5)")),
    edit("cross-attention-roles-swapped", 5, "multihead.py", PROJECTIONS,
         PROJECTIONS.replace("q_proj(x)", "q_proj(SOURCE)").replace("(source)", "(x)").replace("SOURCE", "source")),
    edit("padding-mask-ignored", 5, "multihead.py", MHA_MASK, "        mask = None"),
    edit("padding-mask-sized-by-keys", 5, "multihead.py", MHA_MASK, MHA_MASK.replace("x.size(1)", "source.size(1)")),
    edit("dropout-in-eval", 5, "multihead.py", MHA_DROPOUT, "        dropout_p = self.dropout"),
    edit("dropout-forgotten", 5, "multihead.py", MHA_DROPOUT, "        dropout_p = 0.0"),
    edit("torch-sdpa-in-module-manual-path", 5, "multihead.py", MANUAL,
         "            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, dropout_p=dropout_p)"),
    edit("no-value-error-for-heads", 5, "multihead.py",
         '        if embed_dim % num_heads != 0:\n            raise ValueError(f"embed_dim={embed_dim} is not divisible by num_heads={num_heads}")\n', ""),
    edit("causal-cross-attention-accepted", 5, "multihead.py",
         '        if is_causal and context is not None:\n            raise ValueError("is_causal=True only makes sense for self-attention; got a context")\n', ""),
    edit("bias-argument-ignored", 5, "multihead.py", "        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)",
         "        self.q_proj = nn.Linear(embed_dim, embed_dim)"),
    edit("heads-merged-without-transpose", 5, "multihead.py", "        return self.out_proj(merge_heads(heads))",
         "        return self.out_proj(heads.reshape(x.shape))"),
    # Part 6: the fused path
    edit("fused-ignores-padding", 6, "multihead.py", FUSED, FUSED.replace("attn_mask=mask", "attn_mask=None")),
    edit("fused-inverted-mask", 6, "multihead.py", FUSED, FUSED.replace("attn_mask=mask", "attn_mask=None if mask is None else ~mask")),
    edit("fused-float-mask-of-ones", 6, "multihead.py", FUSED, FUSED.replace("attn_mask=mask", "attn_mask=None if mask is None else mask.float()")),
    edit("fused-mask-and-is-causal-together", 6, "multihead.py", FOLD, ""),
    edit("fused-causal-mask-on-default-device", 6, "multihead.py", "causal_mask(q.size(-2), k.size(-2), device=q.device)",
         "causal_mask(q.size(-2), k.size(-2))"),
    edit("fused-dropout-in-eval", 6, "multihead.py", FUSED, FUSED.replace("dropout_p=dropout_p", "dropout_p=self.dropout")),
    edit("fused-dropout-forgotten", 6, "multihead.py", FUSED, FUSED.replace("dropout_p=dropout_p", "dropout_p=0.0")),
    edit("fused-float32-additive-mask", 6, "multihead.py", FUSED, FUSED.replace(
        "attn_mask=mask", "attn_mask=None if mask is None else torch.zeros(mask.shape).masked_fill(~mask, float('-inf'))")),
]
