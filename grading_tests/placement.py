"""Device placement checks: results land on the inputs' device, on the device asked for, or on torch's default.

The second device is a GPU where the student's code can reach one (in-process on a GPU machine, or the engine's
sandboxes with --gpu), else a device emulated on the CPU (grader/wire/emulated.py): the `second_device` fixture
(conftest.py) says which, and a test that runs student code there asks for it and hands it to these helpers. The
emulated device has values, so every check decides on every machine:
code that reads values (int(n), .item(), .tolist(), boolean indexing) runs there as on a GPU, and what a GPU
refuses it refuses too (tensors of two devices in one operation, .numpy()), with CUDA's message. A call that
raises there fails the check; no exception, whatever its text, makes a check inconclusive.
"""
from __future__ import annotations

from grader.gateway import CallOptions, CallResult, GradedFunction, ModuleResult, ModuleSpec, StudentError
from grading_tests.checks import describe_call, expect_computed, expect_devices, expect_result, fail

# What torch says when tensors of two devices meet in one operation: a placement bug, on any device.
MISMATCH_WORDS = ("expected device", "same device", "device mismatch")


def _failed(error: StudentError, what: str, device: str):
    hint = (": create every tensor on the inputs' device (device=x.device), never on a fixed one"
            if any(words in error.message.lower() for words in MISMATCH_WORDS) else "")
    fail(f"{what} on the {device} device raised {error.type_name}: {error.message}{hint}")


def call_placed(second: str, function: GradedFunction, *args, shape, device_argument: bool = False,
                default_device: bool = False, **kwargs) -> CallResult:
    """function (student.<name>) with every tensor input on the second device (`second`: the test's second_device
    fixture), or (device_argument) with device=<the second device> passed to it, or (default_device) with the
    second device torch's default device and no device passed; the result must have `shape` (see expect_result) and
    be on the second device.

    With default_device the same call is made three times, the default changed between them (the second device,
    none, the second device again), so a result remembered from an earlier call (a cache keyed on device=None)
    lands on the wrong device in one of them, whichever came first."""
    if device_argument:
        kwargs, options, where = {**kwargs, "device": second}, CallOptions(), ""
    elif default_device:
        options, where = CallOptions(default_device=second), f" with torch's default device {second}"
    else:
        options, where = CallOptions(device=second), f" with inputs on {second}"
    result = _placed(function, args, kwargs, options, describe_call(function.name, args, kwargs) + where, second,
                     shape)
    if default_device:
        _placed(function, args, kwargs, CallOptions(),
                describe_call(function.name, args, kwargs) + " with no default device set (after a call with one)",
                "cpu", shape)
        result = _placed(function, args, kwargs, options, describe_call(function.name, args, kwargs) + where +
                         " (after a call with none)", second, shape)
    return result


def _placed(function: GradedFunction, args, kwargs, options: CallOptions, what: str, device: str,
            shape) -> CallResult:
    try:
        result = function(*args, options=options, **kwargs)
    except StudentError as error:
        _failed(error, what, device)
    expect_result(result, shape, what)
    expect_devices(result, device, what)
    return result


def run_module_placed(second: str, student, spec: ModuleSpec, what: str, shape) -> ModuleResult:
    """MultiHeadAttention built, loaded and run with the module and its inputs on the second device (`second`)."""
    try:
        result = student.run_module(spec, CallOptions(device=second))
    except StudentError as error:
        _failed(error, what, second)
    expect_computed(result.output, shape, f"the output of {what}")
    expect_devices(result, second, what)
    return result
