"""Typed messages between the trusted grader and a sandbox: one dataclass per message.

Every message has one encode (message.encode() -> frame bytes) and one decode
(decode(value, *allowed) -> message, from a frame's value), both driven by the types its fields are
annotated with (field_types): decode refuses anything but the expected kinds and fields of the
expected types. A field may be a dataclass of such fields (a request's CallOptions and ModuleSpec):
it travels as a mapping and comes back as that dataclass, checked the same way. What a reply means
(its shapes against the request, its devices against its tensors) is checked in replies.py.
"""
from __future__ import annotations

import functools
import types
import typing
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, ClassVar

import torch

from grader.wire import protocol
from grader.wire.executor import CallOptions, ModuleSpec
from grader.wire.protocol import ProtocolError

NONE = type(None)
TEXT_LIST = "list of str"
TEXT_MAP = "dict of str to str"


class Message:
    KIND: ClassVar[str]
    VIEWS: ClassVar[bool] = False      # its tensors travel with their layouts (requests: protocol.py)

    def encode(self) -> bytes:
        return protocol.encode({"kind": self.KIND, **_mapping(self)}, views=self.VIEWS)


def _mapping(record) -> dict:
    """A dataclass's fields as a mapping the wire can carry (a field that is a dataclass, as a mapping too)."""
    return {f.name: _mapping(value) if is_dataclass(value := getattr(record, f.name)) else value
            for f in fields(record)}


@functools.cache
def field_types(cls) -> dict[str, Any]:
    """Field -> what decode accepts there, read from the dataclass's annotations: a type, a tuple of types (a
    union with None), TEXT_LIST (list[str]), TEXT_MAP (dict[str, str]), object (Any) or a dataclass."""
    hints = typing.get_type_hints(cls)
    return {f.name: _accepted(hints[f.name]) for f in fields(cls)}


def _accepted(hint):
    if hint is Any:
        return object
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        found = []
        for member in typing.get_args(hint):
            kind = _accepted(member)
            found += list(kind) if isinstance(kind, tuple) else [kind]
        return tuple(found)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list and args == (str,):
        return TEXT_LIST
    if origin is dict and args == (str, str):
        return TEXT_MAP
    return origin or hint


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
    return _record(cls, {key: item for key, item in value.items() if key != "kind"}, cls.KIND)


def _record(cls, body: dict, what: str):
    """cls(**body), each field of its annotated type (a dataclass field decoded from its own mapping)."""
    expected = field_types(cls)
    if set(body) != set(expected):
        raise ProtocolError(f"a {what} message with fields {sorted(body)[:12]}")
    for name, kind in expected.items():
        item = body[name]
        if is_dataclass(kind):
            if type(item) is not dict:
                raise ProtocolError(f"{what}.{name} has type {type(item).__name__}")
            body[name] = _record(kind, item, f"{what}.{name}")
            continue
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
            raise ProtocolError(f"{what}.{name} has type {type(item).__name__}")
    return cls(**body)


# ---------------------------------------------------------------- trusted -> sandbox

@dataclass
class CallRequest(Message):
    KIND: ClassVar[str] = "call"
    VIEWS: ClassVar[bool] = True
    function: str
    args: tuple
    kwargs: dict
    options: CallOptions = CallOptions()


@dataclass
class ModuleRequest(Message):
    KIND: ClassVar[str] = "module"
    VIEWS: ClassVar[bool] = True
    spec: ModuleSpec
    options: CallOptions = CallOptions()


@dataclass
class ChecksRequest(Message):
    """Run the handout's public checks with pytest on the imported submission: these files of its student/tests/,
    which the worker put there from the instructor's copy (public_checks.py). Never part of a grade."""
    KIND: ClassVar[str] = "checks"
    files: list[str]


# ---------------------------------------------------------------- sandbox -> trusted

@dataclass
class Ready(Message):
    """The submission imported; unloadable: each graded name whose module failed to import -> why (its other
    names are graded); events: what the sandbox's tripwires saw while it imported."""
    KIND: ClassVar[str] = "ready"
    unloadable: dict[str, str] = field(default_factory=dict)
    events: list[str] = field(default_factory=list)


@dataclass
class Locked(Message):
    """The sandbox has locked itself down (its first frame, before any student code runs). From then on the student's
    code can write to the socket too, so a Broken after it is a forgery, never the engine's word."""
    KIND: ClassVar[str] = "locked"


@dataclass
class Go(Message):
    """The trusted side takes a waiting sandbox over: only now does it import the submission, so no student code of
    a sandbox runs before it is the one answering (the import is timed and counted as the student's)."""
    KIND: ClassVar[str] = "go"


@dataclass
class Broken(Message):
    """The sandbox could not lock itself down as the run's plan says: the engine's failure, never the student's.
    Only ever the first frame (instead of Locked), sent before any student code runs."""
    KIND: ClassVar[str] = "broken"
    reason: str


@dataclass
class Failure(Message):
    """The student's code raised (at import, or in the call): its exception's class name and message."""
    KIND: ClassVar[str] = "failure"
    type_name: str
    message: str
    events: list[str] = field(default_factory=list)


@dataclass
class CallReply(Message):
    KIND: ClassVar[str] = "call-reply"
    value: Any
    devices: list[str]
    input_grads: list | None
    args_after: list
    attention_calls: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)


@dataclass
class ModuleReply(Message):
    KIND: ClassVar[str] = "module-reply"
    parameters: dict
    output: torch.Tensor | None = None
    devices: list[str] = field(default_factory=list)
    input_grads: dict | None = None
    param_grads: dict | None = None
    inputs_after: dict = field(default_factory=dict)
    attention_calls: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    sdpa_calls: list = field(default_factory=list)   # each SDPA call's arguments (executor.sdpa_arguments)


@dataclass
class ChecksReply(Message):
    """Each public check's pytest node id -> its outcome in words (checks_runner.py): what the sandbox says, which
    the trusted side keeps only for the node ids it knows, worth no points."""
    KIND: ClassVar[str] = "checks-reply"
    outcomes: dict[str, str]
    events: list[str] = field(default_factory=list)


REPLIES = (CallReply, ModuleReply, ChecksReply, Failure)
AT_START = (Ready, Failure, Broken)
REQUESTS = (CallRequest, ModuleRequest, ChecksRequest)


def _read_annotations(*classes) -> None:
    for cls in classes:
        _read_annotations(*(kind for kind in field_types(cls).values() if is_dataclass(kind)))


# Every message's field types read now, at import: a sandbox drops the project's modules from sys.modules, where
# typing looks up the names an annotation uses.
_read_annotations(*Message.__subclasses__())
