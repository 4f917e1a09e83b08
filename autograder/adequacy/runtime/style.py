"""Habits of correct code, as decorators: written into a generated style as student/_style.py (styles.py).

None changes an answer; each does what students' correct code does around it, and must cost nothing.
"""
import functools
import math
import sys

import numpy as np
import torch

# The device habit: pick CUDA when there is one.
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def shown(function):
    """Print what goes in (to stdout) and what comes out (to stderr), values and all."""
    @functools.wraps(function)
    def printing(*args, **kwargs):
        print(f"calling {function.__qualname__} with",
              [tuple(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__ for a in args])
        result = function(*args, **kwargs)
        print(f"{function.__qualname__} gave", result, file=sys.stderr)
        return result
    return printing


def via_numpy(function):
    """A little bookkeeping in numpy and math on the way in."""
    @functools.wraps(function)
    def counting(*args, **kwargs):
        sizes = np.array([a.numel() for a in args if isinstance(a, torch.Tensor)], dtype=np.int64)
        _ = math.prod(sizes.tolist()) + math.sqrt(float(np.sum(sizes)))
        return function(*args, **kwargs)
    return counting


def on_cuda_too(function):
    """A CUDA branch: synchronise after a call on CUDA tensors (not taken on the CPU)."""
    @functools.wraps(function)
    def synchronising(*args, **kwargs):
        result = function(*args, **kwargs)
        if DEVICE.type == "cuda" and any(isinstance(a, torch.Tensor) and a.is_cuda for a in args):
            torch.cuda.synchronize()
        return result
    return synchronising
