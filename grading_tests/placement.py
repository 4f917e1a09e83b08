"""Device placement checks: results land on the inputs' device (or on the device asked for).

With a GPU the call runs there, and an error or a result on another device fails. Without one,
PyTorch's meta device stands in for "another device": its tensors have shapes and dtypes but no
values, so code that reads values (int(n), .item(), `if mask.all():`, .tolist(), boolean
indexing) cannot run on it. When a call fails on the meta device with anything but a device
mismatch, and the same call runs on the CPU, placement cannot be decided here: the check is
inconclusive (skipped, worth nothing, like the CUDA tests without a GPU), never a failure.
"""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from grading_tests.checks import describe_call, expect_devices, fail
from grading_tests.gateway import CallOptions, CallResult, ModuleResult, ModuleSpec, StudentError

SECOND_DEVICE = "cuda" if torch.cuda.is_available() else "meta"
# What torch says when tensors of two devices meet in one operation: a placement bug, on any device.
MISMATCH_WORDS = ("expected device", "same device", "device mismatch")


def is_device_mismatch(error: StudentError) -> bool:
    return any(words in error.message for words in MISMATCH_WORDS)


def _decide(error: StudentError, what: str, run_on_cpu) -> None:
    """A call on SECOND_DEVICE raised: fail, or skip when only the missing values can explain it."""
    if SECOND_DEVICE == "meta" and not is_device_mismatch(error):
        try:
            run_on_cpu()
        except StudentError:
            pass   # it fails on the CPU too: not the stand-in device's fault
        else:
            pytest.skip(f"inconclusive on this machine: {what} raised {error.type_name} on the meta device, which "
                        f"holds no values ({error.message.splitlines()[0][:200]}), and runs on the CPU; your code "
                        f"likely reads tensor values (int(), .item(), if tensor: ...). Placement is checked where a "
                        f"GPU is present; this check is worth nothing here")
    hint = (": create every tensor on the inputs' device (device=x.device), never on a fixed one"
            if is_device_mismatch(error) else "")
    fail(f"{what} on the {SECOND_DEVICE} device raised {error.type_name}: {error.message}{hint}")


def call_placed(student, function: str, *args, device_argument: bool = False, **kwargs) -> CallResult:
    """student.<function> with every tensor input on SECOND_DEVICE, or (device_argument) with
    device=SECOND_DEVICE passed to it; the result's devices must be SECOND_DEVICE."""
    def call_on(device):
        if device_argument:
            return student.call(function, args, {**kwargs, "device": device}, CallOptions())
        return student.call(function, args, kwargs, CallOptions(device=device))

    shown = {**kwargs, "device": SECOND_DEVICE} if device_argument else kwargs
    what = describe_call(function, args, shown) + ("" if device_argument else f" with inputs on {SECOND_DEVICE}")
    try:
        result = call_on(SECOND_DEVICE)
    except StudentError as error:
        _decide(error, what, lambda: call_on("cpu"))
    expect_devices(result, SECOND_DEVICE, what)
    return result


def run_module_placed(student, spec: ModuleSpec, what: str) -> ModuleResult:
    """MultiHeadAttention built, loaded and run with the module and its inputs on SECOND_DEVICE."""
    options = CallOptions(device=SECOND_DEVICE)
    try:
        result = student.run_module(spec, options)
    except StudentError as error:
        _decide(error, what, lambda: student.run_module(spec, replace(options, device="cpu")))
    expect_devices(result, SECOND_DEVICE, what)
    return result
