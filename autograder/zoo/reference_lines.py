"""Lines of the reference solution (assignment/reference) that the zoo's bugs and variants edit.

An edit must match exactly once (autograder.samples.edited_reference checks), so a change to the
reference that moves one of these lines fails loudly instead of silently dropping a sample.
"""
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
FUSED = ("        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, "
         "is_causal=is_causal)")
FOLD = ("        if is_causal and mask is not None:\n"
        "            # Not every SDPA backend takes attn_mask together with is_causal: fold them into one mask.\n"
        "            mask = mask & causal_mask(q.size(-2), k.size(-2), device=q.device)\n"
        "            is_causal = False\n")
PADDING_BODY = ("    lengths = torch.as_tensor(lengths, device=device)\n"
                "    if max_len is None:\n"
                "        max_len = int(lengths.max()) if lengths.numel() else 0\n"
                "    positions = torch.arange(max_len, device=device)\n"
                "    return positions.unsqueeze(0) < lengths.unsqueeze(1)\n")
ATTENTION_BODY = ("    scores = scaled_scores(q, k, scale)\n"
                  "    if is_causal:\n")
