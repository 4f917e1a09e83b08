"""Correct solutions written differently from the reference. Every one must score exactly 100."""
from autograder.samples import reference_source
from autograder.zoo import Sample, edit, sample
from autograder.zoo.reference_lines import (
    ATTENTION_BODY,
    FOLD,
    FUSED,
    MANUAL,
    MHA_MASK,
    PADDING_BODY,
    PROJECTIONS,
    SOFTMAX,
    ZERO_ROWS,
)


def _edits(name: str, *changes: tuple[str, str, str]) -> Sample:
    """A variant made of several (module, old, new) edits, each applied exactly once."""
    def make():
        overrides: dict[str, str] = {}
        for module, old, new in changes:
            text = overrides.get(module, reference_source(module))
            if text.count(old) != 1:
                raise ValueError(f"{module}: expected exactly one {old!r}, found {text.count(old)}")
            overrides[module] = text.replace(old, new)
        return overrides
    return sample(name, None, make)


def _view_permute_heads() -> Sample:
    return _edits("view-permute-heads",
                  ("heads.py", "    return x.reshape(B, L, num_heads, E // num_heads).transpose(1, 2)",
                   "    return x.view(B, L, num_heads, E // num_heads).permute(0, 2, 1, 3)"),
                  ("heads.py", "    return x.transpose(1, 2).reshape(B, L, H * D)",
                   "    return x.permute(0, 2, 1, 3).contiguous().view(B, L, H * D)"))


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
    edit("nan-to-num-for-empty-rows", None, "masking.py", ZERO_ROWS,
         "        weights = torch.nan_to_num(weights, nan=0.0)"),
    edit("bernoulli-dropout", None, "masking.py", "        weights = F.dropout(weights, p=dropout_p, training=True)",
         "        keep = torch.rand(weights.shape, device=weights.device) >= dropout_p\n"
         "        weights = weights * keep / (1 - dropout_p)"),
    edit("materialised-expanded-mask", None, "padding.py",
         "    return mask[:, None, None, :].expand(B, 1, num_queries, S)",
         "    return mask.reshape(B, 1, 1, S).repeat(1, 1, num_queries, 1)"),
    edit("loop-over-heads", None, "multihead.py", MANUAL,
         "            heads = torch.stack([scaled_dot_product_attention(\n"
         "                q[:, h], k[:, h], v[:, h], None if mask is None else mask[:, 0],\n"
         "                is_causal=is_causal, dropout_p=dropout_p)[0] for h in range(self.num_heads)], dim=1)"),
    edit("fused-float-additive-mask", None, "multihead.py", FUSED,
         "        if mask is not None:\n"
         "            mask = torch.zeros(mask.shape, dtype=q.dtype, device=q.device).masked_fill(\n"
         "                ~mask, float('-inf'))\n"
         + FUSED),
]


# ---------------------------------------------------------------- idioms of real attention code

def _torch_docs_attention() -> Sample:
    """The reference implementation printed in the docstring of torch's F.scaled_dot_product_attention
    (an additive float bias, torch.dropout), made batch- and device-safe; empty rows through nan_to_num."""
    def make():
        text = reference_source("masking.py")
        start, end = text.find(ATTENTION_BODY), text.find("    return weights @ v, weights\n")
        if start < 0 or end < start:
            raise ValueError("masking.py: the attention body this variant replaces is gone")
        return {"masking.py": text[:start] + body + text[end:]}

    body = ("    scores = scaled_scores(q, k, scale)\n"
            "    L, S = scores.size(-2), scores.size(-1)\n"
            "    attn_bias = torch.zeros(L, S, dtype=scores.dtype, device=scores.device)\n"
            "    if is_causal:\n"
            "        temp_mask = torch.ones(L, S, dtype=torch.bool, device=scores.device).tril(diagonal=0)\n"
            "        attn_bias = attn_bias.masked_fill(temp_mask.logical_not(), float(\"-inf\"))\n"
            "    if mask is not None:\n"
            "        attn_bias = attn_bias.masked_fill(mask.logical_not(), float(\"-inf\"))\n"
            "    weights = torch.nan_to_num(torch.softmax(scores + attn_bias, dim=-1), nan=0.0)\n"
            "    weights = torch.dropout(weights, dropout_p, train=True)\n")
    return sample("torch-docs-additive-bias", None, make)


VARIANTS += [
    # padding_mask that reads the lengths' values (the device checks run it on the emulated device, which has them).
    edit("padding-mask-from-python-ints", None, "masking.py", PADDING_BODY,
         "    lengths = [int(n) for n in lengths]\n"
         "    if max_len is None:\n"
         "        max_len = max(lengths, default=0)\n"
         "    rows = [[position < n for position in range(max_len)] for n in lengths]\n"
         "    return torch.tensor(rows, dtype=torch.bool, device=device).reshape(len(lengths), max_len)\n"),
    edit("padding-mask-filled-with-item", None, "masking.py", PADDING_BODY,
         "    counts = [n.item() if isinstance(n, torch.Tensor) else n for n in lengths]\n"
         "    if max_len is None:\n"
         "        max_len = max(counts, default=0)\n"
         "    mask = torch.zeros(len(counts), max_len, dtype=torch.bool, device=device)\n"
         "    for row, count in enumerate(counts):\n"
         "        mask[row, :count] = True\n"
         "    return mask\n"),
    # A tensor's lengths stay where they are (as_tensor with device None), the positions follow them there.
    edit("padding-mask-follows-the-lengths", None, "masking.py",
         "    if device is None and isinstance(lengths, torch.Tensor):\n"
         "        device = lengths.device\n" + PADDING_BODY,
         "    lengths = torch.as_tensor(lengths, device=device)\n"
         "    if max_len is None:\n"
         "        max_len = int(lengths.max()) if lengths.numel() else 0\n"
         "    return torch.arange(max_len, device=lengths.device) < lengths[:, None]\n"),
    # Hugging Face style: drop a padding mask that hides nothing (reads values, like the above).
    edit("all-ones-mask-shortcut", None, "multihead.py", MHA_MASK,
         "        if padding_mask is not None and torch.all(padding_mask == 1):\n"
         "            padding_mask = None\n" + MHA_MASK),
    # fairseq / HF style softmax in float32 for half precision, float64 kept.
    edit("float32-softmax-for-half-precision", None, "masking.py", SOFTMAX,
         "    masked = apply_mask(scores, mask)\n"
         "    softmax_dtype = torch.promote_types(masked.dtype, torch.float32)\n"
         "    weights = torch.softmax(masked, dim=-1, dtype=softmax_dtype).to(masked.dtype)"),
    # nanoGPT / timm style packed projection (c_attn, qkv) through F.linear on the four nn.Linear's weights.
    edit("packed-qkv-projection", None, "multihead.py", PROJECTIONS,
         "        if context is None:\n"
         "            weight = torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight])\n"
         "            bias = None if self.q_proj.bias is None else torch.cat(\n"
         "                [self.q_proj.bias, self.k_proj.bias, self.v_proj.bias])\n"
         "            q, k, v = F.linear(x, weight, bias).chunk(3, dim=-1)\n"
         "        else:\n"
         "            q = self.q_proj(x)\n"
         "            weight = torch.cat([self.k_proj.weight, self.v_proj.weight])\n"
         "            bias = None if self.k_proj.bias is None else torch.cat([self.k_proj.bias, self.v_proj.bias])\n"
         "            k, v = F.linear(source, weight, bias).chunk(2, dim=-1)\n"
         "        q, k, v = (split_heads(t, self.num_heads) for t in (q, k, v))\n"),
    # Masks as stride-0 expand views: a causal mask from two expanded position grids, a per-head (B, H, L, S) mask.
    _edits("expand-views",
           ("masking.py", "    return torch.ones(L, S, dtype=torch.bool, device=device).tril()",
            "    queries = torch.arange(L, device=device)[:, None].expand(L, S)\n"
            "    return queries >= torch.arange(S, device=device)[None, :].expand(L, S)"),
           ("multihead.py", MHA_MASK,
            "        mask = None if padding_mask is None else padding_mask[:, None, None, :].expand(\n"
            "            -1, self.num_heads, x.size(1), -1)")),
    # The Annotated Transformer: divide by sqrt(d_k) rather than multiply by a scale.
    _edits("divide-by-sqrt-d-k",
           ("scaling.py", "import torch\n", "import math\n\nimport torch\n"),
           ("scaling.py", "    if scale is None:\n        scale = q.size(-1) ** -0.5\n",
            "    if scale is None:\n        return torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))\n")),
    # Hugging Face BERT: an additive mask of finfo.min instead of a fill.
    edit("additive-finfo-min-mask", None, "masking.py", 'scores.masked_fill(~mask, float("-inf"))',
         "scores + (~mask).to(scores.dtype) * torch.finfo(scores.dtype).min"),
    _torch_docs_attention(),
    # x-transformers: einsum for the weighted sum too.
    edit("einsum-weighted-values", None, "masking.py", "    return weights @ v, weights",
         '    return torch.einsum("...ls,...sd->...ld", weights, v), weights'),
    # fairseq: heads folded into the batch, the queries scaled in place, the mask repeated per head.
    edit("fairseq-folded-heads", None, "multihead.py", MANUAL,
         "            B, H, L, D = q.shape\n"
         "            S = k.size(-2)\n"
         "            folded = None if mask is None else mask.expand(B, H, L, S).reshape(B * H, L, S)\n"
         "            q = q.reshape(B * H, L, D)\n"
         "            q *= D ** -0.5\n"
         "            heads, _ = scaled_dot_product_attention(\n"
         "                q, k.reshape(B * H, S, D), v.reshape(B * H, S, D), folded, is_causal=is_causal, scale=1.0,\n"
         "                dropout_p=dropout_p)\n"
         "            heads = heads.reshape(B, H, L, D)"),
    # Hugging Face / timm: an nn.Dropout submodule on the weights instead of dropout_p.
    _edits("nn-dropout-module",
           ("multihead.py", "        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)\n",
            "        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)\n"
            "        self.attn_dropout = nn.Dropout(dropout)\n"),
           ("multihead.py", MANUAL,
            "            _, weights = scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal)\n"
            "            heads = self.attn_dropout(weights) @ v")),
    # The fused path as a loop over heads, one SDPA call per head on (B, L, D), the queries scaled beforehand.
    edit("fused-one-call-per-head-prescaled", None, "multihead.py", FUSED,
         "        return torch.stack([F.scaled_dot_product_attention(\n"
         "            q[:, h] * q.size(-1) ** -0.5, k[:, h], v[:, h], attn_mask=None if mask is None else mask[:, 0],\n"
         "            dropout_p=dropout_p, is_causal=is_causal, scale=1.0) for h in range(q.size(1))], dim=1)"),
    # The fused path never passes is_causal: the causal mask always goes into attn_mask.
    edit("fused-always-bool-mask", None, "multihead.py", FOLD,
         "        if is_causal:\n"
         "            causal = causal_mask(q.size(-2), k.size(-2), device=q.device)\n"
         "            mask = causal if mask is None else mask & causal\n"
         "            is_causal = False\n"),
]
