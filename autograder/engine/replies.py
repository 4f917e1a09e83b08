"""What a sandbox sent back, checked before any test sees it: plain values that agree with the request.

Runs in the trusted process. Raises protocol.ProtocolError for anything malformed or
contradictory; the gateway then discards that sandbox and fails the call.
"""
from __future__ import annotations

import torch

from autograder.engine import protocol
from autograder.engine.protocol import ProtocolError, checked, text
from grading_tests.gateway import CallResult, ModuleResult, flat_tensors


def call_result(reply: dict, n_args: int) -> CallResult:
    value = protocol.plain_value(reply.get("value"))
    devices = _devices(reply, flat_tensors(value))
    grads = reply.get("input_grads")
    if grads is not None:
        grads = protocol.plain_value(checked(grads, list, "input_grads"))
        if len(grads) != n_args or any(g is not None and not _is_tensor(g) for g in grads):
            raise ProtocolError("input_grads do not match the arguments")
    mutated = checked(reply.get("inputs_mutated"), list, "inputs_mutated")
    if not all(type(i) is int and 0 <= i < n_args for i in mutated):
        raise ProtocolError("inputs_mutated names arguments that do not exist")
    return CallResult(value=value, devices=devices, input_grads=grads, inputs_mutated=mutated)


def module_result(reply: dict) -> ModuleResult:
    parameters = checked(reply.get("parameters"), dict, "parameters")
    for name, shape in parameters.items():
        checked(name, str, "parameter name")
        if type(shape) is not tuple or not all(type(s) is int for s in shape):
            raise ProtocolError("parameter shapes must be tuples of ints")
    submodules = {text(k, "submodule"): text(v, "submodule class")
                  for k, v in checked(reply.get("submodules"), dict, "submodules").items()}
    output = reply.get("output")
    if output is not None and not _is_tensor(output):
        raise ProtocolError("forward output is not a tensor")
    output = protocol.plain_tensor(output) if output is not None else None
    grads = {}
    for key in ("input_grads", "param_grads"):
        value = reply.get(key)
        if value is not None:
            value = protocol.plain_value(checked(value, dict, key))
            if any(g is not None and not _is_tensor(g) for g in value.values()):
                raise ProtocolError(f"{key} hold something that is not a tensor")
        grads[key] = value
    return ModuleResult(
        parameters=dict(parameters), submodules=submodules, output=output,
        devices=_devices(reply, [output] if output is not None else []),
        input_grads=grads["input_grads"], param_grads=grads["param_grads"],
        inputs_mutated=[text(k, "input name") for k in checked(reply.get("inputs_mutated"), list, "inputs_mutated")],
    )


def _devices(reply: dict, tensors: list[torch.Tensor]) -> list[str]:
    """The devices the sandbox reports for the returned tensors, checked against the tensors themselves.

    Results travel as CPU copies except meta tensors, which stay meta: a claimed device that
    contradicts that (a CPU result said to be on meta) is a lie, not a measurement.
    """
    devices = [text(d, "device") for d in checked(reply.get("devices"), list, "devices")]
    if len(devices) != len(tensors):
        raise ProtocolError("devices do not match the returned tensors")
    for device, tensor in zip(devices, tensors):
        try:
            claimed = torch.device(device)
        except (RuntimeError, ValueError):
            raise ProtocolError(f"unknown device {device[:40]!r}") from None
        if (claimed.type == "meta") != (tensor.device.type == "meta"):
            raise ProtocolError(f"a result reported on {claimed} arrived as a {tensor.device.type} tensor")
    return devices


def _is_tensor(value) -> bool:
    return type(value) is torch.Tensor
