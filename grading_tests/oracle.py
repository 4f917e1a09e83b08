"""The trusted answers: attention written from the math, in float64, on the grader's side.

Nothing here imports the student package or the reference solution. Every function
takes the grader's own copies of the inputs and returns float64 (or bool) CPU tensors,
except that `mha`, the one multi-head oracle, also computes in another dtype, on another
device or with torch's SDPA as its attention step (the GPU checks and Part 6 use these).
`visible` is the one place where a mask and the causal mask are folded together.
The *_MISTAKES tables compute the outputs of common wrong solutions, so a failure message
can say which mistake the student's numbers match.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

F64 = torch.float64


def _f64(tensor):
    return None if tensor is None else tensor.to("cpu", F64)


# ---------------------------------------------------------------- Parts 1-4: functions

def scores(q, k, scale=None):
    q, k = _f64(q), _f64(k)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    return torch.matmul(q, k.transpose(-2, -1)) * scale


def causal(L, S=None):
    S = L if S is None else S
    return torch.tensor([[j <= i for j in range(S)] for i in range(L)], dtype=torch.bool).reshape(L, S)


def padding(lengths, max_len=None):
    lengths = [int(n) for n in lengths]
    max_len = max(lengths, default=0) if max_len is None else max_len
    return torch.tensor([[j < n for j in range(max_len)] for n in lengths], dtype=torch.bool).reshape(len(lengths),
                                                                                                      max_len)


def expand(mask, num_queries):
    B, S = mask.shape
    return mask.reshape(B, 1, 1, S).expand(B, 1, num_queries, S).clone()


def visible(mask, is_causal, L, S):
    """The effective bool mask (broadcastable to (..., L, S)) or None: the given mask, folded with the
    causal mask when is_causal (a key is visible only when both allow it). The one place the suite
    combines the two."""
    if not is_causal:
        return mask
    causal_mask = causal(L, S)
    if mask is None:
        return causal_mask
    return mask & causal_mask.to(mask.device)


def attend(q, k, v, mask=None, scale=None):
    """The attention step written out, in the dtype and on the device of q, k, v: (output, weights).

    mask: None or bool, broadcastable to (..., L, S), True = may attend. A masked score becomes the
    dtype's most negative value and its weight exactly 0; a row with no visible key gets zero weights.
    """
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if mask is None:
        weights = torch.softmax(s, dim=-1)
    else:
        mask = mask.to(s.device).expand_as(s)
        s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
        weights = torch.softmax(s, dim=-1) * (mask & mask.any(dim=-1, keepdim=True))
    return torch.matmul(weights, v), weights


def attention(q, k, v, mask=None, is_causal=False, scale=None):
    """(output, weights) of scaled dot-product attention in float64; rows with no visible key are zero."""
    q, k, v = _f64(q), _f64(k), _f64(v)
    return attend(q, k, v, visible(_cpu(mask), is_causal, q.shape[-2], k.shape[-2]), scale)


def _cpu(mask):
    return None if mask is None else mask.cpu()


def split(x, num_heads):
    B, L, E = x.shape
    D = E // num_heads
    out = torch.empty(B, num_heads, L, D, dtype=x.dtype)
    for h in range(num_heads):
        out[:, h] = x[:, :, h * D:(h + 1) * D]
    return out


def merge(x):
    return torch.cat([x[:, h] for h in range(x.shape[1])], dim=-1)


# ---------------------------------------------------------------- Part 5: the module

def sdpa_step(q, k, v, mask=None, scale=None):
    """The attention step through torch's own F.scaled_dot_product_attention, for mha(attend=...)."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale), None


def mha(state, num_heads, x, context=None, padding_mask=None, is_causal=False, scale=None, *,
        dtype=F64, device="cpu", attend=attend):
    """MultiHeadAttention.forward from a state_dict of the four projections: the one multi-head oracle.

    Computes in `dtype` on `device` (default: float64 on the CPU, the golden answer); autograd flows to
    tensors in state, x and context that require grad. `attend(q, k, v, mask, scale) -> (heads, _)`
    is the attention step on (B, H, L, D) heads with the folded bool mask: the math written out
    (default) or torch's SDPA (sdpa_step). scale None means each head's 1/sqrt(D).
    """
    state = {key: value.to(device, dtype) for key, value in state.items()}
    x = x.to(device, dtype)
    source = x if context is None else context.to(device, dtype)
    (B, L, E), S = x.shape, source.shape[1]
    D = E // num_heads

    def project(t, name):
        return F.linear(t, state[f"{name}.weight"], state.get(f"{name}.bias"))

    def heads(t):
        return t.reshape(B, -1, num_heads, D).transpose(1, 2)

    q, k, v = heads(project(x, "q_proj")), heads(project(source, "k_proj")), heads(project(source, "v_proj"))
    expanded = None if padding_mask is None else expand(padding_mask.cpu(), L)
    mask = visible(expanded, is_causal, L, S)
    out, _ = attend(q, k, v, None if mask is None else mask.to(device), scale)
    return project(out.transpose(1, 2).reshape(B, L, E), "out_proj")


def sdpa_arguments(padding_mask, is_causal, L, S):
    """(attn_mask, is_causal) that a correct fused path hands to F.scaled_dot_product_attention: the
    expanded padding mask folded with the causal mask when there is padding, else is_causal alone."""
    if padding_mask is None:
        return None, is_causal
    return visible(expand(padding_mask.cpu(), L), is_causal, L, S), False


def random_state(embed_dim, bias=True, seed=0):
    """Weights for the four projections, drawn from the grader's own generator."""
    gen = torch.Generator().manual_seed(seed)
    state = {}
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        state[f"{name}.weight"] = torch.randn(embed_dim, embed_dim, generator=gen) / math.sqrt(embed_dim)
        if bias:
            state[f"{name}.bias"] = torch.randn(embed_dim, generator=gen) * 0.1
    return state


# ---------------------------------------------------------------- known mistakes, for hints

def _softmax_wrong_dim(q, k, v, mask=None, is_causal=False, scale=None):
    s = scores(q, k, scale)
    m = visible(mask, is_causal, s.shape[-2], s.shape[-1])
    if m is not None:
        s = s.masked_fill(~m.expand_as(s), torch.finfo(F64).min)
    weights = torch.softmax(s, dim=-2)
    return weights @ _f64(v), weights


def _transposed_mask(q, k, v, mask=None, is_causal=False, scale=None):
    s = scores(q, k, scale)
    m = visible(mask, is_causal, s.shape[-2], s.shape[-1])
    if m is None or m.shape[-1] != m.shape[-2]:
        return None
    return attention(q, k, v, m.transpose(-2, -1), False, scale)


def _inverted_mask(q, k, v, mask=None, is_causal=False, scale=None):
    s = scores(q, k, scale)
    m = visible(mask, is_causal, s.shape[-2], s.shape[-1])
    return None if m is None else attention(q, k, v, ~m, False, scale)


def _mask_after_softmax(q, k, v, mask=None, is_causal=False, scale=None):
    s = scores(q, k, scale)
    m = visible(mask, is_causal, s.shape[-2], s.shape[-1])
    if m is None:
        return None
    weights = torch.softmax(s, dim=-1) * m
    return weights @ _f64(v), weights


ZERO_IS_NONE = ("matches the default 1/sqrt(E): scale=0.0 was taken for no scale at all (write `if scale is "
                "None:`, not `scale or ...`: 0.0 is a scale)")

# name -> (hint, fn(q, k, v, mask, is_causal, scale) -> (output, weights) or None)
ATTENTION_MISTAKES = {
    "zero is none": (ZERO_IS_NONE, lambda q, k, v, mask, c, scale: attention(q, k, v, mask, c, None)
                     if scale == 0 else None),
    "unscaled": ("matches unscaled attention: did you divide the scores by sqrt(E)?",
                 lambda q, k, v, mask, c, scale: attention(q, k, v, mask, c, 1.0) if scale is None else None),
    "scale by 1/E": ("matches scores divided by E instead of sqrt(E)",
                     lambda q, k, v, mask, c, scale:
                     attention(q, k, v, mask, c, 1.0 / q.shape[-1]) if scale is None else None),
    "ignored scale": ("matches attention with the default 1/sqrt(E): the `scale` argument was ignored",
                      lambda q, k, v, mask, c, scale: attention(q, k, v, mask, c, None) if scale is not None else None),
    "no causal": ("matches attention without the causal mask: is_causal was ignored",
                  lambda q, k, v, mask, c, scale: attention(q, k, v, mask, False, scale) if c else None),
    "no mask": ("matches attention without the given mask: was `mask` ignored (for example when is_causal is set)?",
                lambda q, k, v, mask, c, scale: attention(q, k, v, None, c, scale) if mask is not None else None),
    "inverted": ("matches attention with the mask inverted: True means MAY attend, as in torch's SDPA",
                 _inverted_mask),
    "transposed": ("matches attention with the mask transposed (mask[j, i] instead of mask[i, j]): "
                   "a causal mask must be lower-triangular (tril), True where key j <= query i",
                   _transposed_mask),
    "softmax dim": ("matches a softmax over the queries (dim=-2): the softmax runs over the keys, the last dim",
                    _softmax_wrong_dim),
    "mask after softmax": ("matches zeroing masked weights after the softmax: mask the scores BEFORE the softmax "
                           "so each row still sums to 1", _mask_after_softmax),
}

SCORE_MISTAKES = {
    "zero is none": (ZERO_IS_NONE, lambda q, k, scale: scores(q, k, None) if scale == 0 else None),
    "unscaled": ("matches q @ k^T without scaling: did you multiply by 1/sqrt(E)?",
                 lambda q, k, scale: scores(q, k, 1.0) if scale is None else None),
    "1/E": ("matches scores divided by E instead of sqrt(E)",
            lambda q, k, scale: scores(q, k, 1.0 / q.shape[-1]) if scale is None else None),
    "times sqrt": ("matches scores multiplied by sqrt(E) instead of divided",
                   lambda q, k, scale: scores(q, k, math.sqrt(q.shape[-1])) if scale is None else None),
    "ignored scale": ("matches the default 1/sqrt(E) scaling: the `scale` argument was ignored",
                      lambda q, k, scale: scores(q, k, None) if scale is not None else None),
    "1/scale": ("matches scores divided by `scale` instead of multiplied by it",
                lambda q, k, scale: scores(q, k, 1.0 / scale) if scale not in (None, 0) else None),
    "k @ q^T": ("matches k @ q^T: the result must be (..., L, S) = q @ k^T",
                lambda q, k, scale: scores(k, q, None if scale is None else scale).transpose(-2, -1)
                if scale is not None or q.shape[-1] == k.shape[-1] else None),
}


def mha_mistakes(state, num_heads, x, context=None, padding_mask=None, is_causal=False):
    """(hint, expected-if-that-mistake) pairs for MultiHeadAttention.forward."""
    E = x.shape[-1]
    return [
        ("matches scaling by 1/sqrt(embed_dim): scale by the HEAD dim D = embed_dim // num_heads",
         lambda: mha(state, num_heads, x, context, padding_mask, is_causal, scale=1 / math.sqrt(E))
         if num_heads > 1 else None),
        ("matches unscaled attention: did you divide by sqrt(D)?",
         lambda: mha(state, num_heads, x, context, padding_mask, is_causal, scale=1.0)),
        ("matches attention without the padding mask: padded keys must get no attention",
         lambda: mha(state, num_heads, x, context, None, is_causal) if padding_mask is not None else None),
        ("matches attention without the causal mask: is_causal was ignored",
         lambda: mha(state, num_heads, x, context, padding_mask, False) if is_causal else None),
        ("matches cross-attention with the roles swapped: queries come from x, keys and values from context",
         lambda: mha(state, num_heads, context, x, None, False)
         if context is not None and padding_mask is None and context.shape == x.shape else None),
        ("matches attention with the padding mask inverted: True marks the real tokens",
         lambda: mha(state, num_heads, x, context, ~padding_mask, is_causal) if padding_mask is not None else None),
    ]
