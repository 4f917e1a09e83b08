"""The wire between the trusted grader and a sandbox: length-prefixed frames of plain data, no pickle.

A frame is

    8 bytes  length of the rest (big-endian)
    4 bytes  length of the header
    header   JSON: {"value": <tree>, "tensors": [[dtype, shape, device], ...]}
    data     the tensors' bytes, one after another, in the order of the table

A tensor's device is "cpu" or "emulated" (both carry their values; a decoded tensor of the emulated
device is a CPU tensor whose `wire_device` says where it was) or "meta" (no values: only its shape).

where the tree holds JSON values plus {"tensor": i}, {"tuple": [...]}, {"dict": [[key, value], ...]}
and {"dtype": name}. Decoding never runs code and checks every size before it allocates: the frame
and header against their limits, each tensor's dtype, rank and element count, and that its bytes
are exactly shape x item size and lie in the frame (no views, no strides, no shared storage), so a
frame of a few bytes can never become gigabytes on the trusted side. Typed messages on top of this
are in messages.py.

Requests to a sandbox also carry each tensor's layout (encode and decode with views=True): a tensor that is
not contiguous from the start of its storage (transposed, permuted, sliced, expanded, offset) travels as the
span of storage its elements lie in, with its strides and storage offset, and is decoded as the same view, so
student code gets the layouts real callers pass. The trusted side never decodes a view: its decode refuses one.
"""
from __future__ import annotations

import json
import math
import os
import select
import struct
import time

import torch

from grader.wire import emulated, layout

LENGTH = struct.Struct("!Q")
HEADER_LENGTH = struct.Struct("!I")
MAX_FRAME = 64 << 20             # bytes of one frame
MAX_HEADER = 1 << 20             # bytes of its JSON header
MAX_ITEMS = 10_000               # leaves and containers in one value
MAX_DEPTH = 12
MAX_TEXT = 4000                  # characters of one string
MAX_RANK = 8
MAX_ELEMENTS = 1 << 24           # of one tensor with data (16 M)
MAX_META_ELEMENTS = 1 << 40      # of one meta tensor (no data: only its shape travels)
MAX_VIEW_OFFSET = 64             # elements before a view's first one (any offset shows code that assumes none)
DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128)}


class ProtocolError(Exception):
    """The other side sent something that is not a well-formed message."""


class Closed(ProtocolError):
    """The other side closed the connection (it exited or crashed)."""


class TimedOut(Exception):
    """No complete message arrived in time."""


# ---------------------------------------------------------------- encoding (either side)

def encode(value, *, views: bool = False) -> bytes:
    """One frame holding value (plain data: see the module's docstring); views: with each tensor's layout."""
    table: list[list] = []
    chunks: list[bytes] = []
    tree = _tree(value, table, chunks, 0, views)
    header = json.dumps({"value": tree, "tensors": table}, separators=(",", ":")).encode()
    body = HEADER_LENGTH.pack(len(header)) + header + b"".join(chunks)
    return LENGTH.pack(len(body)) + body


def _tree(value, table: list, chunks: list, depth: int, views: bool):
    if depth > MAX_DEPTH:
        raise ValueError("value nested too deeply to send")
    if isinstance(value, torch.Tensor):
        return {"tensor": _add_tensor(value, table, chunks, views)}
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if type(value) is tuple:
        return {"tuple": [_tree(item, table, chunks, depth + 1, views) for item in value]}
    if type(value) is list:
        return [_tree(item, table, chunks, depth + 1, views) for item in value]
    if type(value) is dict:
        return {"dict": [[_key(key), _tree(item, table, chunks, depth + 1, views)] for key, item in value.items()]}
    raise ValueError(f"a {type(value).__name__} cannot be sent")


def _key(key) -> str:
    if type(key) is not str:
        raise ValueError(f"a dict key of type {type(key).__name__} cannot be sent")
    return key


def _add_tensor(tensor: torch.Tensor, table: list, chunks: list, views: bool) -> int:
    if type(tensor) not in (torch.Tensor, emulated.EmulatedTensor) or tensor.layout != torch.strided:
        raise ValueError(f"a {type(tensor).__name__} with layout {tensor.layout} cannot be sent")
    name = str(tensor.dtype).removeprefix("torch.")
    if name not in DTYPES:
        raise ValueError(f"a tensor of dtype {tensor.dtype} cannot be sent")
    device = "meta" if tensor.device.type == "meta" else wire_device(tensor)
    entry: list = [name, [int(s) for s in tensor.shape], device]
    if device != "meta":
        values = emulated.to_plain(tensor.detach()).to("cpu")
        view = views and layout.is_view(values)
        if view:   # the span of storage its elements lie in, and how to see them in it
            data = layout.storage_span(values).contiguous()
            entry.append({"stride": list(values.stride()), "offset": min(values.storage_offset(), MAX_VIEW_OFFSET)})
        else:
            data = values.contiguous().reshape(-1)
        chunks.append(data.view(torch.uint8).numpy().tobytes() if data.numel() else b"")
    table.append(entry)
    return len(table) - 1


def wire_device(tensor: torch.Tensor) -> str:
    """Where a tensor was, as the wire says it: "emulated" for one of the emulated device (or decoded from
    one), "meta", else "cpu" (a CUDA result travels as a CPU copy; its device is reported beside it)."""
    if isinstance(tensor, emulated.EmulatedTensor):
        return emulated.NAME
    if tensor.device.type == "meta":
        return "meta"
    return getattr(tensor, "wire_device", "cpu")


# ---------------------------------------------------------------- decoding (checks before allocating)

def decode(body: bytes, *, views: bool = False):
    """The value held by one frame's body (without its 8-byte length). Raises ProtocolError, and nothing else,
    whatever the bytes: a frame the checks below did not foresee (a dtype given as a list, say) is refused too.
    views: accept tensors that carry a layout (a sandbox reading a request; never the trusted side)."""
    try:
        return _decode(body, views)
    except ProtocolError:
        raise
    except Exception as error:  # noqa: BLE001 - hostile bytes: any other failure is a refusal as well
        raise ProtocolError(f"an undecodable frame ({type(error).__name__})") from None


def _decode(body: bytes, views: bool):
    if len(body) < HEADER_LENGTH.size:
        raise ProtocolError("a frame too short to hold a header")
    (header_size,) = HEADER_LENGTH.unpack_from(body)
    if header_size > MAX_HEADER or HEADER_LENGTH.size + header_size > len(body):
        raise ProtocolError(f"a header of {header_size} bytes (the limit is {MAX_HEADER}, the frame {len(body)})")
    try:
        header = json.loads(bytes(body[HEADER_LENGTH.size:HEADER_LENGTH.size + header_size]))
    except (ValueError, RecursionError) as error:
        raise ProtocolError(f"an unreadable header ({type(error).__name__})") from None
    if type(header) is not dict or set(header) != {"value", "tensors"} or type(header["tensors"]) is not list:
        raise ProtocolError("a header that is not {value, tensors}")
    tensors = _tensors(header["tensors"], memoryview(body)[HEADER_LENGTH.size + header_size:], views)
    return _value(header["value"], tensors, [MAX_ITEMS], 0)


def _tensors(table: list, data: memoryview, views: bool) -> list[torch.Tensor]:
    if len(table) > MAX_ITEMS:
        raise ProtocolError("too many tensors")
    found, offset = [], 0
    for entry in table:
        if type(entry) is not list or len(entry) not in ((3, 4) if views else (3,)):
            raise ProtocolError("a malformed tensor entry")
        name, shape, device = entry[:3]
        if name not in DTYPES or device not in ("cpu", "meta", emulated.NAME):
            raise ProtocolError(f"a tensor of dtype {str(name)[:20]!r} on {str(device)[:20]!r}")
        if type(shape) is not list or len(shape) > MAX_RANK or not all(type(s) is int and s >= 0 for s in shape):
            raise ProtocolError("a tensor shape that is not a short list of non-negative ints")
        view = entry[3] if len(entry) == 4 else None
        count = math.prod(shape)
        if count > (MAX_META_ELEMENTS if device == "meta" else MAX_ELEMENTS):
            raise ProtocolError(f"a tensor of {count} elements (over the limit)")
        dtype = DTYPES[name]
        if device == "meta":
            found.append(torch.empty(shape, dtype=dtype, device="meta"))
            continue
        stored = shape
        if view is not None:
            stored = [_span_of(shape, view)]
        size = math.prod(stored) * dtype.itemsize
        if offset + size > len(data):
            raise ProtocolError(f"a tensor of shape {shape} needs {size} bytes; the frame has {len(data) - offset}")
        raw = torch.frombuffer(bytearray(data[offset:offset + size]), dtype=torch.uint8) if size else None
        offset += size
        if dtype is torch.bool:   # a byte other than 0 or 1 is not a bool
            tensor = raw.ne(0).reshape(stored) if raw is not None else torch.empty(stored, dtype=dtype)
        else:
            tensor = raw.view(dtype).reshape(stored) if raw is not None else torch.empty(stored, dtype=dtype)
        if view is not None:
            tensor = layout.viewed(tensor, shape, view["stride"], view["offset"])
        if device == emulated.NAME:
            tensor.wire_device = device   # type: ignore[attr-defined]  # read by wire_device()
        found.append(tensor)
    if offset != len(data):
        raise ProtocolError(f"{len(data) - offset} bytes after the last tensor")
    return found


def _span_of(shape: list, view) -> int:
    """The storage a view needs (checked: non-negative strides, a small offset, within the limit)."""
    if type(view) is not dict or set(view) != {"stride", "offset"}:
        raise ProtocolError("a malformed tensor layout")
    stride, start = view["stride"], view["offset"]
    if type(stride) is not list or len(stride) != len(shape) or not all(type(s) is int and s >= 0 for s in stride):
        raise ProtocolError("a tensor layout whose strides are not non-negative ints, one per dimension")
    if type(start) is not int or not 0 <= start <= MAX_VIEW_OFFSET:
        raise ProtocolError("a tensor layout with an offset out of range")
    needed = layout.span(shape, stride)
    if needed > MAX_ELEMENTS:
        raise ProtocolError(f"a tensor layout spanning {needed} elements (over the limit)")
    return needed


def _value(tree, tensors: list, budget: list, depth: int):
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        raise ProtocolError("a value too large or too deeply nested")
    if tree is None or type(tree) in (bool, int, float):
        return tree
    if type(tree) is str:
        if len(tree) > MAX_TEXT:
            raise ProtocolError("a string too long")
        return tree
    if type(tree) is list:
        return [_value(item, tensors, budget, depth + 1) for item in tree]
    if type(tree) is dict and len(tree) == 1:
        (kind, content), = tree.items()
        if kind == "tensor" and type(content) is int and 0 <= content < len(tensors):
            return tensors[content]
        if kind == "tuple" and type(content) is list:
            return tuple(_value(item, tensors, budget, depth + 1) for item in content)
        if kind == "dict" and type(content) is list and all(type(p) is list and len(p) == 2 and type(p[0]) is str
                                                              for p in content):
            return {key: _value(item, tensors, budget, depth + 1) for key, item in content}
        if kind == "dtype" and content in DTYPES:
            return DTYPES[content]
    raise ProtocolError("a value of an unknown kind")


# ---------------------------------------------------------------- reading frames

class FrameReader:
    """Reads one frame at a time from a socket while draining side pipes (the sandbox's output)."""

    def __init__(self, sock, on_side_data=None, *, views: bool = False):
        self.sock, self.views = sock, views
        self.buffer = bytearray()
        self.on_side_data = on_side_data or {}   # fd -> callback(bytes); closed fds are dropped

    def read(self, deadline: float | None, *, over=None, interval: float = 0.1):
        """The next frame's value. TimedOut at the wall-clock deadline, or as soon as over() says so (checked
        every `interval` seconds, also while output streams in: the trusted side's measure of the sandbox's
        CPU time)."""
        checked = time.monotonic()
        while True:
            if len(self.buffer) >= LENGTH.size:
                (size,) = LENGTH.unpack_from(self.buffer)
                if size > MAX_FRAME:
                    raise ProtocolError(f"a frame of {size} bytes is over the {MAX_FRAME} byte limit")
                if len(self.buffer) >= LENGTH.size + size:
                    body = bytes(self.buffer[LENGTH.size:LENGTH.size + size])
                    del self.buffer[:LENGTH.size + size]
                    return decode(body, views=self.views)
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                raise TimedOut()
            if over is not None and now - checked >= interval:
                checked = now
                if over():
                    raise TimedOut()
            waits = [deadline - now] if deadline is not None else []
            if over is not None:
                waits.append(max(0.0, interval - (now - checked)))
            ready, _, _ = select.select([self.sock, *self.on_side_data], [], [], min(waits) if waits else None)
            for source in ready:
                if source is self.sock:
                    chunk = self.sock.recv(1 << 20)
                    if not chunk:
                        raise Closed("the sandbox closed the connection")
                    self.buffer += chunk
                else:
                    self._side(source)

    def _side(self, source: int) -> None:
        chunk = os.read(source, 1 << 16)
        if chunk:
            self.on_side_data[source](chunk)
        else:
            del self.on_side_data[source]

    def drain_side(self) -> None:
        """Read whatever the side pipes hold right now, without waiting."""
        while self.on_side_data:
            ready, _, _ = select.select(list(self.on_side_data), [], [], 0)
            if not ready:
                return
            for source in ready:
                self._side(source)
