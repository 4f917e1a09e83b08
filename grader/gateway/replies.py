"""What a sandbox sent back, checked and interpreted on the trusted side before any test sees it.

Raises ProtocolError for anything contradictory; the gateway then discards that sandbox and
fails the call. Facts that decide points are derived here from data, never taken from a claim:
in-place changes from the arguments' values after the call against the grader's own copies,
parameter names and shapes from the parameter tensors themselves.
"""
from __future__ import annotations

import torch

from grader.gateway import CallResult, ModuleResult, mutated_names, mutated_positions, shapes_of
from grader.wire.emulated import NAME as SECOND
from grader.wire.executor import flat_tensors
from grader.wire.messages import CallReply, ModuleReply
from grader.wire.protocol import ProtocolError, wire_device


def call_result(reply: CallReply, args: tuple, device: str) -> CallResult:
    """reply to a call with positional args (the grader's own copies) run on device."""
    devices = _devices(reply.devices, flat_tensors(reply.value))
    grads = reply.input_grads
    if grads is not None and (len(grads) != len(args) or not all(g is None or _is_tensor(g) for g in grads)):
        raise ProtocolError("input_grads do not match the arguments")
    after = reply.args_after
    if len(after) != len(args):
        raise ProtocolError("the arguments after the call do not match the arguments")
    for sent, back in zip(args, after, strict=False):
        if isinstance(sent, torch.Tensor) != _is_tensor(back):
            raise ProtocolError("an argument after the call is not what was sent")
        if _is_tensor(back):
            _on(back, device, "an argument after the call")
    return CallResult(value=reply.value, devices=devices, input_grads=grads,
                      inputs_mutated=mutated_positions(args, after))


def module_result(reply: ModuleReply, forward_kwargs: dict | None, device: str) -> ModuleResult:
    """reply to building (and running) a module with forward_kwargs (the grader's own copies) on device."""
    parameters = reply.parameters
    if not all(type(name) is str and _is_tensor(value) for name, value in parameters.items()):
        raise ProtocolError("parameters must be named tensors")
    output = reply.output
    if forward_kwargs is None:
        if output is not None or reply.inputs_after:
            raise ProtocolError("a module that was only built returned an output")
        return ModuleResult(parameters=shapes_of(parameters))
    if output is None:
        raise ProtocolError("forward returned no output")
    devices = _devices(reply.devices, [output])
    for key in ("input_grads", "param_grads"):
        grads = getattr(reply, key)
        if grads is not None and not all(g is None or _is_tensor(g) for g in grads.values()):
            raise ProtocolError(f"{key} hold something that is not a tensor")
    sent = {name for name, value in forward_kwargs.items() if isinstance(value, torch.Tensor)}
    if set(reply.inputs_after) != sent or not all(_is_tensor(v) for v in reply.inputs_after.values()):
        raise ProtocolError("the inputs after the call do not match the inputs")
    for value in reply.inputs_after.values():
        _on(value, device, "an input after the call")
    return ModuleResult(parameters=shapes_of(parameters), output=output, devices=devices,
                        input_grads=reply.input_grads, param_grads=reply.param_grads,
                        inputs_mutated=mutated_names(forward_kwargs, reply.inputs_after))


DEVICE_TYPES = ("cpu", "cuda", "meta", SECOND)


def _devices(devices: list[str], tensors: list[torch.Tensor]) -> list[str]:
    """The devices the sandbox reports for the returned tensors, checked against the tensors themselves.

    Results travel as CPU copies, except meta tensors (no values: they stay meta) and tensors of the emulated
    device (the wire says so): a claimed device that contradicts the wire (a CPU result said to be on the
    emulated device or on meta) is a lie, not a measurement.
    """
    if len(devices) != len(tensors):
        raise ProtocolError("devices do not match the returned tensors")
    for device, tensor in zip(devices, tensors, strict=False):
        claimed, _, index = device.partition(":")
        if claimed not in DEVICE_TYPES or not (index == "" or index.isdigit()):
            raise ProtocolError(f"unknown device {device[:40]!r}")
        for special in ("meta", SECOND):
            if (claimed == special) != (wire_device(tensor) == special):
                raise ProtocolError(f"a result reported on {device[:40]} arrived as a {wire_device(tensor)} tensor")
    return devices


def _on(tensor: torch.Tensor, device: str, what: str) -> None:
    """A copy made after the call is a meta tensor, or one of the emulated device, exactly when the call ran there."""
    asked = device.split(":")[0]
    for special in ("meta", SECOND):
        if (wire_device(tensor) == special) != (asked == special):
            raise ProtocolError(f"{what} came back as a {wire_device(tensor)} tensor for a call on {device}")


def _is_tensor(value) -> bool:
    return type(value) is torch.Tensor
