"""Tensor layouts beyond the contiguous: what a view is, the storage it spans, and the same view made again.

The hidden tests pass views (transposed, permuted, sliced, expanded, at an offset), as real callers do; the wire
(protocol.py) carries each as the span of storage its elements lie in plus its strides and offset, and the
sandbox's executor makes the same view again on the device it runs on, so student code meets those strides.
"""
from __future__ import annotations

import math

import torch


def is_view(tensor: torch.Tensor) -> bool:
    """Whether a tensor is laid out other than contiguously from the start of its storage."""
    return tensor.numel() > 1 and (not tensor.is_contiguous() or tensor.storage_offset() > 0)


def span(shape, stride) -> int:
    """How many elements of storage a tensor of this shape and these (non-negative) strides lies in, from its first."""
    return 1 + sum((size - 1) * step for size, step in zip(shape, stride, strict=True)) if math.prod(shape) else 0


def storage_span(tensor: torch.Tensor) -> torch.Tensor:
    """The storage a tensor's elements lie in, from its first, as a 1-D view."""
    return tensor.as_strided((span(tensor.shape, tensor.stride()),), (1,), tensor.storage_offset())


def viewed(values: torch.Tensor, shape, stride, offset: int) -> torch.Tensor:
    """A view of shape and stride over a new storage holding `values` (1-D) after `offset` elements."""
    storage = torch.empty(offset + values.numel(), dtype=values.dtype, device=values.device)
    storage[offset:] = values
    return storage.as_strided(tuple(shape), tuple(stride), offset)


def moved(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A detached copy of its own on device, laid out as the tensor is."""
    tensor = tensor.detach()
    if not is_view(tensor):
        return tensor.to(device).clone()
    return viewed(storage_span(tensor).to(device), tensor.shape, tensor.stride(), int(tensor.storage_offset()))
