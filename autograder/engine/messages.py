"""Typed messages between the trusted grader and a sandbox: one dataclass per message.

Every message has one encode (message.encode() -> frame bytes) and one decode
(decode(value, *allowed) -> message, from a frame's value), both driven by the class's FIELDS:
decode refuses anything but the expected kinds and fields of the expected types. What a reply
means (its shapes against the request, its devices against its tensors) is checked in replies.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import torch

from autograder.engine import protocol
from autograder.engine.protocol import ProtocolError

NONE = type(None)
TEXT_LIST = "list of str"
TEXT_MAP = "dict of str to str"


class Message:
    KIND: ClassVar[str]
    FIELDS: ClassVar[dict[str, Any]]   # field -> a type, a tuple of types, or TEXT_LIST
    VIEWS: ClassVar[bool] = False      # its tensors travel with their layouts (requests: protocol.py)

    def encode(self) -> bytes:
        return protocol.encode({"kind": self.KIND, **{f.name: getattr(self, f.name) for f in fields(self)}},
                               views=self.VIEWS)


def decode(value, *allowed: type[Message]) -> Message:
    """The message a frame's value holds, if it is one of the allowed kinds with well-typed fields. Raises
    ProtocolError, and nothing else, whatever the value."""
    try:
        return _decode(value, allowed)
    except ProtocolError:
        raise
    except Exception as error:  # noqa: BLE001 - a value from a sandbox: any other failure is a refusal as well
        raise ProtocolError(f"an unreadable message ({type(error).__name__})") from None


def _decode(value, allowed) -> Message:
    if type(value) is not dict or type(value.get("kind")) is not str:
        raise ProtocolError("not a message")
    kinds = {cls.KIND: cls for cls in allowed}
    cls = kinds.get(value["kind"])
    if cls is None:
        raise ProtocolError(f"a message of kind {value['kind'][:40]!r} where {sorted(kinds)} was expected")
    body = {key: item for key, item in value.items() if key != "kind"}
    if set(body) != set(cls.FIELDS):
        raise ProtocolError(f"a {cls.KIND} message with fields {sorted(body)[:12]}")
    for name, kind in cls.FIELDS.items():
        item = body[name]
        if kind is object:
            ok = True
        elif kind == TEXT_LIST:
            ok = type(item) is list and all(type(text) is str for text in item)
        elif kind == TEXT_MAP:
            ok = type(item) is dict and all(type(text) is str for text in item.values())
        else:
            kinds_ = kind if isinstance(kind, tuple) else (kind,)
            ok = type(item) in kinds_ or (torch.Tensor in kinds_ and isinstance(item, torch.Tensor))
        if not ok:
            raise ProtocolError(f"{cls.KIND}.{name} has type {type(item).__name__}")
    return cls(**body)


# ---------------------------------------------------------------- trusted -> sandbox

RUN_FIELDS = {"device": str, "seed": int, "grad_outputs": (tuple, NONE), "sdpa_backend": (str, NONE),
              "default_device": (str, NONE)}


@dataclass
class CallRequest(Message):
    KIND: ClassVar[str] = "call"
    VIEWS: ClassVar[bool] = True
    FIELDS: ClassVar[dict] = {"function": str, "args": tuple, "kwargs": dict, **RUN_FIELDS}
    function: str
    args: tuple
    kwargs: dict
    device: str = "cpu"
    seed: int = 0
    grad_outputs: tuple | None = None
    sdpa_backend: str | None = None
    default_device: str | None = None


@dataclass
class ModuleRequest(Message):
    KIND: ClassVar[str] = "module"
    VIEWS: ClassVar[bool] = True
    FIELDS: ClassVar[dict] = {"init_kwargs": dict, "state_dict": (dict, NONE), "forward_kwargs": (dict, NONE),
                              "training": bool, "dtype": (torch.dtype, NONE), "method": str, **RUN_FIELDS}
    init_kwargs: dict
    state_dict: dict | None = None
    forward_kwargs: dict | None = None
    training: bool = False
    dtype: torch.dtype | None = None
    method: str = "forward"
    device: str = "cpu"
    seed: int = 0
    grad_outputs: tuple | None = None
    sdpa_backend: str | None = None
    default_device: str | None = None


# ---------------------------------------------------------------- sandbox -> trusted

@dataclass
class Ready(Message):
    """The submission imported; unloadable: each graded name whose module failed to import -> why (its other
    names are graded); events: what the sandbox's tripwires saw while it imported."""
    KIND: ClassVar[str] = "ready"
    FIELDS: ClassVar[dict] = {"unloadable": TEXT_MAP, "events": TEXT_LIST}
    unloadable: dict[str, str] = field(default_factory=dict)
    events: list[str] = field(default_factory=list)


@dataclass
class Locked(Message):
    """The sandbox has locked itself down (its first frame, before any student code runs). From then on the student's
    code can write to the socket too, so a Broken after it is a forgery, never the engine's word."""
    KIND: ClassVar[str] = "locked"
    FIELDS: ClassVar[dict] = {}


@dataclass
class Go(Message):
    """The trusted side takes a waiting sandbox over: only now does it import the submission, so no student code of
    a sandbox runs before it is the one answering (the import is timed and counted as the student's)."""
    KIND: ClassVar[str] = "go"
    FIELDS: ClassVar[dict] = {}


@dataclass
class Broken(Message):
    """The sandbox could not lock itself down as the run's plan says: the engine's failure, never the student's.
    Only ever the first frame (instead of Locked), sent before any student code runs."""
    KIND: ClassVar[str] = "broken"
    FIELDS: ClassVar[dict] = {"reason": str}
    reason: str


@dataclass
class Failure(Message):
    """The student's code raised (at import, or in the call): its exception's class name and message."""
    KIND: ClassVar[str] = "failure"
    FIELDS: ClassVar[dict] = {"type_name": str, "message": str, "events": TEXT_LIST}
    type_name: str
    message: str
    events: list[str] = field(default_factory=list)


@dataclass
class CallReply(Message):
    KIND: ClassVar[str] = "call-reply"
    FIELDS: ClassVar[dict] = {"value": object, "devices": TEXT_LIST, "input_grads": (list, NONE), "args_after": list,
                              "attention_calls": TEXT_LIST, "events": TEXT_LIST}
    value: Any
    devices: list[str]
    input_grads: list | None
    args_after: list
    attention_calls: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)


@dataclass
class ModuleReply(Message):
    KIND: ClassVar[str] = "module-reply"
    FIELDS: ClassVar[dict] = {"parameters": dict, "output": (torch.Tensor, NONE), "devices": TEXT_LIST,
                              "input_grads": (dict, NONE), "param_grads": (dict, NONE), "inputs_after": dict,
                              "attention_calls": TEXT_LIST, "events": TEXT_LIST}
    parameters: dict
    output: torch.Tensor | None = None
    devices: list[str] = field(default_factory=list)
    input_grads: dict | None = None
    param_grads: dict | None = None
    inputs_after: dict = field(default_factory=dict)
    attention_calls: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)


REPLIES = (CallReply, ModuleReply, Failure)
AT_START = (Ready, Failure, Broken)
REQUESTS = (CallRequest, ModuleRequest)
