"""Device placement checks: results land on the inputs' device, on the device asked for, or on torch's default.

The second device is a GPU where the grader has one, else a device emulated on the CPU (the engine's
autograder/engine/emulated.py). The emulated device has values, so every check decides on every machine:
code that reads values (int(n), .item(), .tolist(), boolean indexing) runs there as on a GPU, and what a GPU
refuses it refuses too (tensors of two devices in one operation, .numpy()), with CUDA's message. A call that
raises there fails the check; no exception, whatever its text, makes a check inconclusive.
"""
from __future__ import annotations

import torch

from autograder.gateway import CallOptions, CallResult, GradedFunction, ModuleResult, ModuleSpec, StudentError
from grading_tests.checks import describe_call, expect_computed, expect_devices, expect_result, fail

SECOND_DEVICE = "cuda" if torch.cuda.is_available() else "emulated"
# What torch says when tensors of two devices meet in one operation: a placement bug, on any device.
MISMATCH_WORDS = ("expected device", "same device", "device mismatch")


def _failed(error: StudentError, what: str):
    hint = (": create every tensor on the inputs' device (device=x.device), never on a fixed one"
            if any(words in error.message.lower() for words in MISMATCH_WORDS) else "")
    fail(f"{what} on the {SECOND_DEVICE} device raised {error.type_name}: {error.message}{hint}")


def call_placed(function: GradedFunction, *args, shape, device_argument: bool = False, default_device: bool = False,
                **kwargs) -> CallResult:
    """function (student.<name>) with every tensor input on SECOND_DEVICE, or (device_argument) with
    device=SECOND_DEVICE passed to it, or (default_device) with SECOND_DEVICE torch's default device and no
    device passed; the result must have `shape` (see expect_result) and be on SECOND_DEVICE."""
    if device_argument:
        kwargs, options, where = {**kwargs, "device": SECOND_DEVICE}, CallOptions(), ""
    elif default_device:
        options, where = CallOptions(default_device=SECOND_DEVICE), f" with torch's default device {SECOND_DEVICE}"
    else:
        options, where = CallOptions(device=SECOND_DEVICE), f" with inputs on {SECOND_DEVICE}"
    what = describe_call(function.name, args, kwargs) + where
    try:
        result = function(*args, options=options, **kwargs)
    except StudentError as error:
        _failed(error, what)
    expect_result(result, shape, what)
    expect_devices(result, SECOND_DEVICE, what)
    return result


def run_module_placed(student, spec: ModuleSpec, what: str, shape) -> ModuleResult:
    """MultiHeadAttention built, loaded and run with the module and its inputs on SECOND_DEVICE."""
    try:
        result = student.run_module(spec, CallOptions(device=SECOND_DEVICE))
    except StudentError as error:
        _failed(error, what)
    expect_computed(result.output, shape, f"the output of {what}")
    expect_devices(result, SECOND_DEVICE, what)
    return result
