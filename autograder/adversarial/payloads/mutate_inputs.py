"""Cheat: zero the caller's tensors in place and return zeros, hoping the expected values are computed afterwards.

A grader that computed split(x) from its own x after the call would now expect zeros. The
engine's tests keep their own copies (the sandbox only ever sees serialised ones): score 0.
"""
import torch


def _zero(tensor):
    with torch.no_grad():
        tensor.zero_()


def split_heads(x, num_heads):
    _zero(x)
    B, L, E = x.shape
    return torch.zeros(B, num_heads, L, E // num_heads, dtype=x.dtype, device=x.device)


def merge_heads(x):
    _zero(x)
    B, H, L, D = x.shape
    return torch.zeros(B, L, H * D, dtype=x.dtype, device=x.device)


def install(api):
    api.update(split_heads=split_heads, merge_heads=merge_heads)
