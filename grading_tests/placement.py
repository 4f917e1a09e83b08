"""Device placement checks: results land on the inputs' device (or on the device asked for).

With a GPU the call runs there, and an error or a result on another device fails. Without one,
PyTorch's meta device stands in for "another device": its tensors have shapes and dtypes but no
values, so code that reads values (int(n), .item(), `if mask.all():`, .tolist(), boolean
indexing) cannot run on it, and PyTorch may take another code path there (an SDPA backend).
When the student's code fails on the meta device with anything but a device mismatch, and the
same call runs on the CPU, placement cannot be decided here: the check is inconclusive (skipped,
worth nothing, like the CUDA tests without a GPU), never a failure. Errors the grader raises
itself (a refused or forged answer, a timeout, a crash) are never inconclusive.
On the meta device the same call also runs on the CPU, to see a computed result (not a constant).
"""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from autograder.gateway import (
    GRADER_ERRORS,
    CallOptions,
    CallResult,
    GradedFunction,
    ModuleResult,
    ModuleSpec,
    StudentError,
)
from grading_tests.checks import describe_call, expect_computed, expect_devices, expect_result, fail

SECOND_DEVICE = "cuda" if torch.cuda.is_available() else "meta"
# What torch says when tensors of two devices meet in one operation: a placement bug, on any device.
MISMATCH_WORDS = ("expected device", "same device", "device mismatch")


def is_device_mismatch(error: StudentError) -> bool:
    return any(words in error.message for words in MISMATCH_WORDS)


def meta_may_explain(error: StudentError) -> bool:
    """The student's code failed on the meta device for a reason the stand-in device may cause."""
    return error.type_name not in GRADER_ERRORS and not is_device_mismatch(error)


def _decide(error: StudentError, what: str, run_on_cpu) -> None:
    """A call on SECOND_DEVICE raised: fail, or skip when only the missing values can explain it."""
    if SECOND_DEVICE == "meta" and meta_may_explain(error):
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


def call_placed(function: GradedFunction, *args, shape, device_argument: bool = False, **kwargs) -> CallResult:
    """function (student.<name>) with every tensor input on SECOND_DEVICE, or (device_argument) with
    device=SECOND_DEVICE passed to it; the result must have `shape` (see expect_result) and be on
    SECOND_DEVICE."""
    def call_on(device):
        if device_argument:
            return function(*args, **{**kwargs, "device": device})
        return function(*args, options=CallOptions(device=device), **kwargs)

    shown = {**kwargs, "device": SECOND_DEVICE} if device_argument else kwargs
    what = describe_call(function.name, args, shown) + ("" if device_argument else f" with inputs on {SECOND_DEVICE}")
    try:
        result = call_on(SECOND_DEVICE)
    except StudentError as error:
        _decide(error, what, lambda: call_on("cpu"))
    expect_result(result, shape, what)
    expect_devices(result, SECOND_DEVICE, what)
    if SECOND_DEVICE == "meta":   # meta holds no values: the CPU run shows the result is computed
        expect_result(_on_cpu(lambda: call_on("cpu"), what), shape, f"{what} (the same call on the CPU)")
    return result


def _on_cpu(run, what: str):
    try:
        return run()
    except StudentError as error:
        fail(f"{what} on the CPU raised {error.type_name}: {error.message}")


def run_module_placed(student, spec: ModuleSpec, what: str, shape) -> ModuleResult:
    """MultiHeadAttention built, loaded and run with the module and its inputs on SECOND_DEVICE."""
    options = CallOptions(device=SECOND_DEVICE)
    try:
        result = student.run_module(spec, options)
    except StudentError as error:
        _decide(error, what, lambda: student.run_module(spec, replace(options, device="cpu")))
    expect_computed(result.output, shape, f"the output of {what}")
    expect_devices(result, SECOND_DEVICE, what)
    if SECOND_DEVICE == "meta":   # meta holds no values: the CPU run shows the output is computed
        checked = _on_cpu(lambda: student.run_module(spec, replace(options, device="cpu")), what)
        expect_computed(checked.output, shape, f"the output of {what} on the CPU")
    return result
