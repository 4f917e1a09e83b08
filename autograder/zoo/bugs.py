"""Realistic wrong submissions, each with the part its bug lives in. Every one must lose points there."""
from autograder.samples import edited_reference, reference_source
from autograder.zoo import Sample, edit, sample
from autograder.zoo.reference_lines import (
    CAUSAL,
    COMBINE,
    DROPOUT,
    EXPAND,
    FILL,
    FOLD,
    FUSED,
    MANUAL,
    MERGE,
    MHA_DROPOUT,
    MHA_MASK,
    PADDING,
    PROJECTIONS,
    RETURN,
    SCALE,
    SCORES,
    SOFTMAX,
    SPLIT,
    ZERO_ROWS,
)

BUGS = [
    # Part 1: scaled_scores
    edit("no-scale", 1, "scaling.py", SCALE, "        scale = 1.0", "forgot to scale"),
    edit("scale-by-E", 1, "scaling.py", SCALE, "        scale = 1.0 / q.size(-1)", "divides by E, not sqrt(E)"),
    edit("times-sqrt-E", 1, "scaling.py", SCALE, "        scale = q.size(-1) ** 0.5", "multiplies by sqrt(E)"),
    edit("scale-from-keys", 1, "scaling.py", SCALE, "        scale = k.size(-2) ** -0.5", "sqrt(S) instead of sqrt(E)"),
    edit("ignores-scale-argument", 1, "scaling.py", "    if scale is None:\n" + SCALE,
         "    scale = q.size(-1) ** -0.5"),
    edit("k.T-for-batches", 1, "scaling.py", SCORES, "    return torch.matmul(q, k.T) * scale",
         "k.T reverses every dim"),
    edit("detached-scores", 1, "scaling.py", SCORES,
         "    return (torch.matmul(q, k.transpose(-2, -1)) * scale).detach()"),
    edit("float-cast", 1, "scaling.py", SCORES,
         "    return torch.matmul(q.float(), k.float().transpose(-2, -1)) * scale"),
    edit("scales-q-in-place", 1, "scaling.py", SCORES, "    return torch.matmul(q.mul_(scale), k.transpose(-2, -1))"),
    edit("scale-or-default", 1, "scaling.py", "    if scale is None:\n" + SCALE,
         "    scale = scale or q.size(-1) ** -0.5", "scale=0.0 taken for no scale"),
    edit("float32-default-scale", 1, "scaling.py", SCALE, "        scale = 1 / torch.sqrt(torch.tensor(q.size(-1)))",
         "a float32 scale: float64 scores off by 5e-8 of themselves"),
    # "q: queries, shape (..., L, E)."  (reads E from the wrong dim of q)
    edit("scale-from-query-length", 1, "scaling.py", SCALE, "        scale = q.size(-2) ** -0.5",
         "sqrt(L) instead of sqrt(E): the wrong dim of q"),
    # "scores of shape (..., L, S) where scores[..., i, j] = (q_i . k_j) * scale."
    edit("scores-transposed", 1, "scaling.py", SCORES, "    return torch.matmul(k, q.transpose(-2, -1)) * scale",
         "k q^T: scores of shape (..., S, L)"),
    # Part 2: masks and attention
    edit("causal-triu", 2, "masking.py", CAUSAL, CAUSAL.replace(".tril()", ".triu()")),
    edit("causal-hides-diagonal", 2, "masking.py", CAUSAL, CAUSAL.replace(".tril()", ".tril(-1)")),
    edit("causal-mask-on-default-device", 2, "masking.py", CAUSAL, CAUSAL.replace(", device=device", "")),
    edit("padding-off-by-one", 2, "masking.py", PADDING, PADDING.replace("<", "<=")),
    edit("padding-inverted", 2, "masking.py", PADDING, PADDING.replace("<", ">=")),
    edit("padding-ignores-max-len", 2, "masking.py", "    if max_len is None:\n        max_len =",
         "    if True:\n        max_len ="),
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
    edit("float32-softmax-cast-back", 2, "masking.py", SOFTMAX,
         SOFTMAX.replace("dim=-1)", "dim=-1, dtype=torch.float32).to(scores.dtype)"),
         "Hugging Face's idiom, also for float64: computes float64 inputs in float32"),
    edit("detached-weights", 2, "masking.py", RETURN, "    return weights.detach() @ v, weights.detach()"),
    edit("causal-mask-float", 2, "masking.py", CAUSAL, CAUSAL.replace("torch.bool", "torch.float"),
         "a 0/1 float mask: ~mask fails, and SDPA would add it"),
    # "L: number of queries."  (L taken as the number of keys)
    edit("causal-mask-shape-swapped", 2, "masking.py", CAUSAL, CAUSAL.replace("torch.ones(L, S,", "torch.ones(S, L,"),
         "a (S, L) mask: L taken for the keys"),
    # "S: number of keys; None means S = L."
    edit("causal-ignores-S", 2, "masking.py", "    S = L if S is None else S", "    S = L",
         "always square: S ignored"),
    # "lengths: the true length of each sequence: a sequence of ints or a 1-D integer tensor with B entries."
    edit("padding-lengths-list-unconverted", 2, "masking.py",
         "    lengths = torch.as_tensor(lengths, device=device)\n", "",
         "works for a tensor of lengths only: a list has no .max()/.unsqueeze()"),
    # "device: where to create the mask; None means the device of `lengths` when it is a tensor, else ..."
    edit("padding-mask-ignores-lengths-device", 2, "masking.py",
         "    if device is None and isinstance(lengths, torch.Tensor):\n        device = lengths.device\n", "",
         "device=None always means torch's default device, even for a tensor of lengths elsewhere"),
    # "mask: None, or a bool tensor that broadcasts to scores.shape (True = keep, False = hide)."  (None refused)
    edit("apply-mask-without-none-check", 2, "masking.py", "    if mask is None:\n        return scores\n", "",
         "~None: a TypeError whenever attention has no mask"),
    # "q: queries (..., L, E); k: keys (..., S, E); v: values (..., S, Ev)."  (v read as (..., Ev, S))
    edit("values-transposed", 2, "masking.py", RETURN, "    return weights @ v.transpose(-2, -1), weights",
         "v taken as (..., Ev, S), the way k is transposed for the scores"),
    # "Ev may differ from E."  (the default scale taken from v's width)
    edit("default-scale-from-values", 2, "masking.py", "    scores = scaled_scores(q, k, scale)\n",
         "    scores = scaled_scores(q, k, v.size(-1) ** -0.5 if scale is None else scale)\n",
         "1/sqrt(Ev) instead of 1/sqrt(E): right only when Ev == E"),
    # "Leading dims broadcast."
    edit("bmm-for-output", 2, "masking.py", RETURN, "    return torch.bmm(weights, v), weights",
         "torch.bmm: exactly one batch dim, no broadcasting"),
    # "scale: as in scaled_scores (None means 1/sqrt(E))."  (the scale argument not passed on)
    edit("sdpa-ignores-scale", 2, "masking.py", "    scores = scaled_scores(q, k, scale)\n",
         "    scores = scaled_scores(q, k)\n", "an explicit scale never reaches scaled_scores"),
    # "With dropout, these are the weights after dropout, the ones actually multiplied with v. output ... = weights @...
    edit("weights-returned-before-dropout", 2, "masking.py",
         "    if dropout_p > 0.0:\n        weights = F.dropout(weights, p=dropout_p, training=True)\n"
         "    return weights @ v, weights",
         "    dropped = F.dropout(weights, p=dropout_p, training=True) if dropout_p > 0.0 else weights\n"
         "    return dropped @ v, weights",
         "returns the weights before dropout, not the ones multiplied with v"),
    # "q, k, v and mask are never modified in place."  (apply_mask inverts the caller's mask in place)
    edit("apply-mask-inverts-mask-in-place", 2, "masking.py", '    return scores.masked_fill(~mask, float("-inf"))',
         '    return scores.masked_fill(mask.logical_not_(), float("-inf"))',
         "logical_not_ for ~: the caller's mask comes back inverted"),
    edit("mask-and-causal-in-place", 2, "masking.py", COMBINE,
         COMBINE.replace("mask & causal", "mask.logical_and_(causal)"), "the caller's mask loses its future keys"),
    # causal_mask: "When L != S it is aligned to the top-left corner, as SDPA's is_causal: row 0 always sees key 0."
    edit("causal-bottom-right", 2, "masking.py", CAUSAL, CAUSAL.replace(".tril()", ".tril(S - L)"),
         "aligned to the bottom-right corner (flash-attn's convention)"),
    # Part 3: heads
    edit("split-without-transpose", 3, "heads.py", SPLIT, "    return x.reshape(B, num_heads, L, E // num_heads)"),
    edit("split-interleaved", 3, "heads.py", SPLIT,
         "    return x.reshape(B, L, E // num_heads, num_heads).permute(0, 3, 1, 2)"),
    edit("merge-without-transpose", 3, "heads.py", MERGE, "    return x.reshape(B, L, H * D)"),
    edit("split-no-value-error", 3, "heads.py",
         '    if E % num_heads != 0:\n'
         '        raise ValueError(f"embedding size E={E} is not divisible by num_heads={num_heads}")\n', ""),
    edit("split-vague-value-error", 3, "heads.py", 'f"embedding size E={E} is not divisible by num_heads={num_heads}"',
         '"bad head count"'),
    # "num_heads: H; must divide E."  (num_heads taken for the width of a head)
    edit("split-num-heads-as-head-dim", 3, "heads.py", SPLIT,
         "    return x.reshape(B, L, E // num_heads, num_heads).transpose(1, 2)",
         "num_heads used as D: (B, D, L, H)"),
    # split_heads: "the result keeps the dtype and the device of x; autograd works; x is never modified in place."
    edit("split-detached", 3, "heads.py", SPLIT, SPLIT.replace("x.reshape(", "x.detach().reshape("),
         "no gradient reaches x"),
    # Part 4: padding-mask expansion
    edit("expand-transposed", 4, "padding.py", EXPAND,
         "    return mask[:, None, :, None].expand(B, 1, S, num_queries)"),
    edit("expand-inverted", 4, "padding.py", EXPAND, EXPAND.replace("mask[", "(~mask)[")),
    edit("expand-wrong-repeat", 4, "padding.py", EXPAND,
         "    return mask.repeat(num_queries, 1).reshape(B, 1, num_queries, S)"),
    edit("expand-masks-queries-too", 4, "padding.py", EXPAND,
         "    return (mask[:, None, None, :] & mask[:, None, :num_queries, None]).expand(B, 1, num_queries, S)"),
    edit("expand-float-mask", 4, "padding.py", EXPAND, EXPAND + ".float()",
         "a float mask is added to the scores by SDPA, not used to hide keys"),
    # "num_queries: L, the number of queries that will look at these keys."
    edit("expand-to-key-count", 4, "padding.py", EXPAND, EXPAND.replace("num_queries", "S"),
         "L = S assumed (self-attention only)"),
    # "The size-1 dim broadcasts over heads, the shape torch's SDPA accepts as attn_mask."
    edit("expand-without-head-dim", 4, "padding.py", EXPAND, "    return mask[:, None, :].expand(B, num_queries, S)",
         "(B, L, S): B lines up with the heads"),
    # expand_padding_mask: "the result lives on the device of mask; mask is never modified in place."
    edit("expand-on-default-device", 4, "padding.py", EXPAND,
         "    return torch.ones(B, 1, num_queries, S, dtype=torch.bool) & mask[:, None, None, :]",
         "a mask of ones made on the default device"),
    # Part 5: MultiHeadAttention, manual path
    edit("manual-path-ignores-padding", 5, "multihead.py", MANUAL, MANUAL.replace("q, k, v, mask,", "q, k, v, None,"),
         "padding_mask reaches only the fused path"),
    edit("scale-by-model-dim", 5, "multihead.py", MANUAL, MANUAL.replace("dropout_p=dropout_p)",
                                                                         "dropout_p=dropout_p, "
                                                                         "scale=self.embed_dim ** -0.5)")),
    edit("cross-attention-roles-swapped", 5, "multihead.py", PROJECTIONS,
         PROJECTIONS.replace("q_proj(x)", "q_proj(SOURCE)").replace("(source)", "(x)").replace("SOURCE", "source")),
    edit("padding-mask-ignored", 5, "multihead.py", MHA_MASK, "        mask = None"),
    edit("padding-mask-sized-by-keys", 5, "multihead.py", MHA_MASK, MHA_MASK.replace("x.size(1)", "source.size(1)")),
    edit("dropout-in-eval", 5, "multihead.py", MHA_DROPOUT, "        dropout_p = self.dropout"),
    edit("dropout-forgotten", 5, "multihead.py", MHA_DROPOUT, "        dropout_p = 0.0"),
    edit("no-value-error-for-heads", 5, "multihead.py",
         '        if embed_dim % num_heads != 0:\n'
         '            raise ValueError(f"embed_dim={embed_dim} is not divisible by num_heads={num_heads}")\n', ""),
    edit("causal-cross-attention-accepted", 5, "multihead.py",
         '        if is_causal and context is not None:\n'
         '            raise ValueError("is_causal=True only makes sense for self-attention; got a context")\n', ""),
    edit("bias-argument-ignored", 5, "multihead.py", "        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)",
         "        self.q_proj = nn.Linear(embed_dim, embed_dim)"),
    edit("heads-merged-without-transpose", 5, "multihead.py", "        return self.out_proj(merge_heads(heads))",
         "        return self.out_proj(heads.reshape(x.shape))"),
    edit("additive-mask-without-zero-rows", 5, "multihead.py", MANUAL,
         "            visible = mask\n"
         "            if is_causal:\n"
         "                causal = causal_mask(q.size(-2), k.size(-2), device=q.device)\n"
         "                visible = causal if visible is None else visible & causal\n"
         "            scores = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5\n"
         "            if visible is not None:\n"
         "                scores = scores + (~visible).to(scores.dtype) * torch.finfo(scores.dtype).min\n"
         "            heads = F.dropout(torch.softmax(scores, dim=-1), p=dropout_p) @ v",
         "attention written inline with an additive mask: a query with no real key gets the mean of the values"),
    # "Create the four projections."
    edit("no-output-projection", 5, "multihead.py",
         "        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)",
         "        self.out_proj = nn.Identity()", "three projections: the heads merged are the output"),
    # "embed_dim: E, the model width (queries, keys, values and output)."
    edit("query-projection-per-head-width", 5, "multihead.py",
         "        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)",
         "        self.q_proj = nn.Linear(embed_dim, embed_dim // num_heads, bias=bias)",
         "q_proj to D = E // H features instead of E"),
    # "fused: False computes attention with this package's own scaled_dot_product_attention (Part 5); ..."
    edit("manual-path-through-fused-attention", 5, "multihead.py", MANUAL,
         "            heads = self._fused_attention(q, k, v, mask, is_causal, dropout_p)",
         "both paths share the fused helper: the manual path calls torch's SDPA (right values, forbidden call)"),
    # "context: None for self-attention, or (B, S, E) for cross-attention: keys and values come from it instead of x."
    edit("values-from-x", 5, "multihead.py", "        v = split_heads(self.v_proj(source), self.num_heads)",
         "        v = split_heads(self.v_proj(x), self.num_heads)", "values from x in cross-attention"),
    # "is_causal: each query sees only keys at or before its position."
    edit("is-causal-not-passed", 5, "multihead.py", MANUAL, MANUAL.replace("is_causal=is_causal, ", ""),
         "is_causal never reaches the attention"),
    # "Works in float16, bfloat16, float32 and float64 (after module.to(dtype)); the output has the dtype of x ..."
    edit("attention-in-float32-not-cast-back", 5, "multihead.py", MANUAL,
         MANUAL.replace("(q, k, v, mask,", "(q.float(), k.float(), v.float(), mask,"),
         "heads left in float32: out_proj of another dtype refuses them"),
    # "float64 is computed in float64 all the way; float16 and bfloat16 may be computed in float32 and cast back."
    edit("manual-attention-in-float32", 5, "multihead.py", MANUAL,
         MANUAL.replace("(q, k, v, mask,", "(q.float(), k.float(), v.float(), mask,") + "\n"
         "            heads = heads.to(q.dtype)", "float32 attention cast back, for float64 too"),
    # "Autograd works: gradients reach x, context and all four projections."
    edit("context-detached", 5, "multihead.py", "        source = x if context is None else context",
         "        source = x if context is None else context.detach()", "no gradient reaches context"),
    # MultiHeadAttention: "The grader loads its own weights into them with load_state_dict(strict=True), so the
    edit("persistent-scale-buffer", 5, "multihead.py", "        self.fused = fused\n",
         "        self.fused = fused\n"
         "        self.register_buffer(\"scale\", torch.tensor((embed_dim // num_heads) ** -0.5))\n",
         "a persistent buffer: load_state_dict(strict=True) misses its key"),
    # forward: "x, context and padding_mask are never modified in place."
    edit("padded-tokens-zeroed-in-place", 5, "multihead.py", MHA_MASK,
         MHA_MASK + "\n        if padding_mask is not None:\n"
         "            source.masked_fill_(~padding_mask[..., None], 0.0)",
         "zeroes the caller's padded key/value tokens (x or context) in place"),
    # Part 6: the fused path
    edit("fused-ignores-padding", 6, "multihead.py", FUSED, FUSED.replace("attn_mask=mask", "attn_mask=None")),
    edit("fused-inverted-mask", 6, "multihead.py", FUSED, FUSED.replace("attn_mask=mask",
                                                                        "attn_mask=None if mask is None else ~mask")),
    edit("fused-float-mask-of-ones", 6, "multihead.py", FUSED, FUSED.replace("attn_mask=mask",
                                                                             "attn_mask=None if mask is None "
                                                                             "else mask.float()")),
    edit("fused-mask-and-is-causal-together", 6, "multihead.py", FOLD, ""),
    edit("fused-causal-mask-on-default-device", 6, "multihead.py",
         "causal_mask(q.size(-2), k.size(-2), device=q.device)",
         "causal_mask(q.size(-2), k.size(-2))"),
    edit("fused-dropout-in-eval", 6, "multihead.py", FUSED, FUSED.replace("dropout_p=dropout_p",
                                                                          "dropout_p=self.dropout")),
    edit("fused-dropout-forgotten", 6, "multihead.py", FUSED, FUSED.replace("dropout_p=dropout_p", "dropout_p=0.0")),
    edit("fused-float32-additive-mask", 6, "multihead.py", FUSED, FUSED.replace(
        "attn_mask=mask",
        "attn_mask=None if mask is None else torch.zeros(mask.shape).masked_fill(~mask, float('-inf'))")),
    # "Part 6: the attention step through torch.nn.functional.scaled_dot_product_attention."
    edit("fused-via-manual-attention", 6, "multihead.py", FUSED,
         "        return scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal, dropout_p=dropout_p)[0]",
         "the fused path never calls torch's SDPA (right values, forbidden path)"),
    # The same, with SDPA called on a slice whose output is thrown away: the call is seen, the values are its own.
    edit("fused-sdpa-output-thrown-away", 6, "multihead.py", FUSED,
         "        F.scaled_dot_product_attention(q[..., :1, :], k, v)\n"
         "        return scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal, dropout_p=dropout_p)[0]",
         "calls torch's SDPA on a slice and throws its output away (sdpa_calls.py)"),
    # "q (B, H, L, D), k and v (B, H, S, D): the heads, already split."
    edit("fused-flash-layout", 6, "multihead.py", FUSED,
         FUSED.replace("(q, k, v,", "(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),") + ".transpose(1, 2)",
         "heads passed as (B, L, H, D), flash-attn's layout, not SDPA's"),
    # "is_causal: hide the keys after each query."
    edit("fused-forgets-is-causal", 6, "multihead.py", FUSED, FUSED.replace("is_causal=is_causal)", "is_causal=False)"),
         "causal only when folded into a padding mask"),
    # "Both create the same four projections."  (__init__ lives in Part 5, but only fused=True can tell: Part 6 loses)
    edit("fused-module-without-out-proj", 6, "multihead.py",
         "        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)\n",
         "        if not fused:   # thinking torch's SDPA projects the output itself\n"
         "            self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)\n",
         "fused=True builds three projections"),
    # "With fused=True the attention itself must go through self._fused_attention."  (forward lives in Part 5, but
    edit("fused-flag-ignored", 6, "multihead.py",
         "        if self.fused:\n            heads = self._fused_attention(q, k, v, mask, is_causal, dropout_p)\n"
         "        else:\n" + MANUAL,
         MANUAL.replace("            heads", "        heads"),
         "forward never looks at self.fused: the fused module runs the manual path"),
    # "With fused=True the attention itself must go through self._fused_attention." -- forward that calls
    edit("forward-inlines-fused-sdpa", 6, "multihead.py",
         "            heads = self._fused_attention(q, k, v, mask, is_causal, dropout_p)",
         "            folded = None if mask is None else (mask & causal_mask(q.size(-2), k.size(-2), device=q.device)"
         " if is_causal else mask)\n"
         "            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=folded, dropout_p=dropout_p,"
         " is_causal=is_causal and mask is None)", "bypasses self._fused_attention"),
]


def _lru_cached_causal_mask() -> Sample:
    """causal_mask behind functools.lru_cache: the cache's key holds device=None, so once a call with one default
    device is cached, a call with another default device gets the first one's tensor."""
    def make():
        text = reference_source("masking.py")
        for old in ("import torch\n", "\ndef causal_mask("):
            if text.count(old) != 1:
                raise ValueError(f"masking.py: expected exactly one {old!r}")
        text = text.replace("import torch\n", "import functools\n\nimport torch\n")
        cached = "\n@functools.lru_cache(maxsize=None)\ndef causal_mask("
        return {"masking.py": text.replace("\ndef causal_mask(", cached)}
    return sample("causal-mask-lru-cached", 2, make, "a cached tensor on the first call's default device")


REMEMBERING_FORWARD = """

_REMEMBERED = {}
_honest_forward = MultiHeadAttention.forward


def _remembering_forward(self, x, *args, **kwargs):
    key = (tuple(x.shape), tuple(x.detach().reshape(-1).tolist()))
    if not self.training and key in _REMEMBERED:
        return _REMEMBERED[key].clone()
    out = _honest_forward(self, x, *args, **kwargs)
    if not self.training:
        _REMEMBERED[key] = out.detach().clone()
    return out


MultiHeadAttention.forward = _remembering_forward
"""


def _eval_dropout_remembered() -> Sample:
    """Dropout in eval mode too, hidden behind a memory of earlier answers: the same input in eval mode gets the
    first answer back, so a check that compares two answers of one process cannot see the dropout."""
    def make():
        text = reference_source("multihead.py")
        if text.count(MHA_DROPOUT) != 1:
            raise ValueError(f"multihead.py: expected exactly one {MHA_DROPOUT!r}")
        return {"multihead.py": text.replace(MHA_DROPOUT, "        dropout_p = self.dropout") + REMEMBERING_FORWARD}
    return sample("eval-dropout-remembered", 5, make, "drops in eval mode; remembers answers to hide it")


# Torch's attention in the manual path with both watches of the rule switched off (the function mode and the
# dispatcher's), the backward pass recomputed by the package's own attention so that no torch attention op runs
# there either: the watches see nothing; the source, read as text, shows the switch (grader/source_rules.py).
WATCHES_OFF = """

class _Unwatched(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, mask, is_causal):
        from torch.utils._python_dispatch import _disable_current_modes
        ctx.save_for_backward(q, k, v)
        ctx.mask, ctx.is_causal = mask, is_causal
        with torch._C.DisableTorchFunction(), _disable_current_modes():
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)

    @staticmethod
    def backward(ctx, grad):
        q, k, v = (t.detach().requires_grad_() for t in ctx.saved_tensors)
        with torch.enable_grad():
            out, _ = scaled_dot_product_attention(q, k, v, ctx.mask, is_causal=ctx.is_causal)
            return (*torch.autograd.grad(out, (q, k, v), grad), None, None)
"""
MANUAL_UNWATCHED = ("            heads = _Unwatched.apply(q, k, v, mask, is_causal) if dropout_p == 0 else "
                    "scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal, dropout_p=dropout_p)[0]")


def _manual_sdpa_behind_switched_off_watches() -> Sample:
    def make():
        edited = edited_reference("multihead.py", MANUAL, MANUAL_UNWATCHED)
        return {"multihead.py": edited["multihead.py"] + WATCHES_OFF}
    return sample("manual-sdpa-behind-switched-off-watches", 5, make,
                  "torch's SDPA in the manual path, the rule's watches switched off around it")


BUGS += [
    _lru_cached_causal_mask(),
    _eval_dropout_remembered(),
    _manual_sdpa_behind_switched_off_watches(),
    # Strides of its own for a contiguous x: right for the output of a Linear, wrong for a transposed or sliced view.
    edit("split-as-strided-contiguous", 3, "heads.py", SPLIT,
         "    D = E // num_heads\n"
         "    return x.as_strided((B, num_heads, L, D), (L * E, D, E, 1))",
         "strides that assume x is contiguous"),
    # Batch dims flattened with .view (as bmm-era code did): fails on a layout .view cannot merge.
    edit("scores-batch-flattened-with-view", 1, "scaling.py", SCORES,
         "    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])\n"
         "    q3 = q.expand(*lead, *q.shape[-2:]).view(-1, q.size(-2), q.size(-1))\n"
         "    k3 = k.expand(*lead, *k.shape[-2:]).view(-1, k.size(-2), k.size(-1))\n"
         "    return torch.bmm(q3, k3.transpose(1, 2)).view(*lead, q.size(-2), k.size(-2)) * scale",
         ".view of an input assumes its memory is contiguous"),
    edit("weighted-values-flattened-with-view", 2, "masking.py", RETURN,
         "    lead = torch.broadcast_shapes(weights.shape[:-2], v.shape[:-2])\n"
         "    w3 = weights.expand(*lead, *weights.shape[-2:]).reshape(-1, *weights.shape[-2:])\n"
         "    v3 = v.expand(*lead, *v.shape[-2:]).view(-1, *v.shape[-2:])\n"
         "    return torch.bmm(w3, v3).view(*lead, weights.size(-2), v.size(-1)), weights",
         ".view of v assumes its memory is contiguous"),
    edit("expand-as-strided-contiguous", 4, "padding.py", EXPAND,
         "    return mask.as_strided((B, 1, num_queries, S), (S, 0, 0, 1))",
         "strides that assume the mask is contiguous"),
    edit("projections-of-a-flattened-view", 5, "multihead.py", PROJECTIONS,
         "        flat_x, flat_source = x.view(-1, x.size(-1)), source.view(-1, source.size(-1))\n"
         "        q = split_heads(self.q_proj(flat_x).view(x.shape), self.num_heads)\n"
         "        k = split_heads(self.k_proj(flat_source).view(source.shape), self.num_heads)\n"
         "        v = split_heads(self.v_proj(flat_source).view(source.shape), self.num_heads)\n",
         "x.view(-1, E) assumes x is contiguous"),
    # A softmax over tiles of 16 keys (flash attention's online softmax) whose running normaliser is not rescaled
    # when a later tile raises the maximum: right up to 16 keys, wrong past them.
    edit("tiled-softmax-not-rescaled", 2, "masking.py", SOFTMAX,
         "    masked = apply_mask(scores, mask)\n"
         "    running_max = torch.full_like(masked[..., :1], float(\"-inf\"))\n"
         "    total = torch.zeros_like(masked[..., :1])\n"
         "    for tile in masked.split(16, dim=-1):\n"
         "        new_max = torch.maximum(running_max, tile.amax(dim=-1, keepdim=True))\n"
         "        total = total + (tile - new_max).exp().sum(dim=-1, keepdim=True)\n"
         "        running_max = new_max\n"
         "    weights = (masked - running_max).exp() / total",
         "the normaliser of earlier tiles is not rescaled to a later maximum"),
]
