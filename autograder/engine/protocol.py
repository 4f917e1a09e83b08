"""The wire between the trusted grader and a sandbox: framed messages of plain data.

Every message is `torch.save` of plain values (dicts, lists, tuples, str, numbers,
None, plain tensors) behind an 8-byte length. Both sides read with
`torch.load(weights_only=True)`, which refuses arbitrary pickles, so an object with a
malicious `__reduce__` cannot run code on the trusted side. The trusted side then
checks the structure (`plain_value`) before any test sees it.
"""
from __future__ import annotations

import io
import os
import select
import struct
import time

import torch

HEADER = struct.Struct("!Q")
MAX_FRAME = 256 * 1024 * 1024      # bytes of one message
MAX_ITEMS = 10_000                 # leaves and containers in one value
MAX_DEPTH = 12
MAX_TEXT = 4000                    # characters of one string coming back
ALLOWED_DTYPES = {
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128,
}


class ProtocolError(Exception):
    """The other side sent something that is not a well-formed message."""


class Closed(ProtocolError):
    """The other side closed the connection (it exited or crashed)."""


class TimedOut(Exception):
    """No complete message arrived in time."""


def encode(message) -> bytes:
    buffer = io.BytesIO()
    torch.save(message, buffer)
    data = buffer.getvalue()
    return HEADER.pack(len(data)) + data


def decode(data: bytes):
    try:
        return torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    except Exception as error:  # noqa: BLE001 - anything malformed is the sender's fault
        raise ProtocolError(f"unreadable message ({type(error).__name__}: {str(error)[:200]})") from None


def send(sock, message) -> None:
    sock.sendall(encode(message))


class FrameReader:
    """Reads one frame at a time from a socket, with a deadline, while draining side pipes."""

    def __init__(self, sock, on_side_data=None):
        self.sock = sock
        self.buffer = bytearray()
        self.on_side_data = on_side_data or {}   # fd -> callback(bytes); closed fds are dropped

    def read(self, deadline: float | None):
        while True:
            if len(self.buffer) >= HEADER.size:
                (size,) = HEADER.unpack_from(self.buffer)
                if size > MAX_FRAME:
                    raise ProtocolError(f"message of {size} bytes is over the {MAX_FRAME} byte limit")
                if len(self.buffer) >= HEADER.size + size:
                    data = bytes(self.buffer[HEADER.size:HEADER.size + size])
                    del self.buffer[:HEADER.size + size]
                    return decode(data)
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if wait == 0.0:
                raise TimedOut()
            ready, _, _ = select.select([self.sock, *self.on_side_data], [], [], wait)
            if not ready:
                raise TimedOut()
            for source in ready:
                if source is self.sock:
                    chunk = self.sock.recv(1 << 20)
                    if not chunk:
                        raise Closed("the sandbox closed the connection")
                    self.buffer += chunk
                else:
                    chunk = os.read(source, 1 << 16)
                    callback = self.on_side_data[source]
                    if chunk:
                        callback(chunk)
                    else:
                        del self.on_side_data[source]

    def drain_side(self) -> None:
        """Read whatever the side pipes hold right now, without waiting."""
        while self.on_side_data:
            ready, _, _ = select.select(list(self.on_side_data), [], [], 0)
            if not ready:
                return
            for source in ready:
                chunk = os.read(source, 1 << 16)
                if chunk:
                    self.on_side_data[source](chunk)
                else:
                    del self.on_side_data[source]


# ------------------------------------------------------------------ checking what comes back

def plain_value(value, *, depth: int = 0, budget: list | None = None):
    """A checked, private copy of a value from the sandbox: plain tensors, numbers, str, None,
    and lists/tuples/dicts (str keys) of these. Raises ProtocolError otherwise."""
    budget = budget if budget is not None else [MAX_ITEMS]
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        raise ProtocolError("the returned value is too large or too deeply nested")
    if isinstance(value, torch.Tensor):
        return plain_tensor(value)
    if value is None or type(value) in (bool, int, float):
        return value
    if type(value) is str:
        if len(value) > MAX_TEXT:
            raise ProtocolError("a returned string is too long")
        return value
    if type(value) in (list, tuple):
        return type(value)(plain_value(item, depth=depth + 1, budget=budget) for item in value)
    if type(value) is dict:
        if not all(type(key) is str for key in value):
            raise ProtocolError("a returned dict has non-string keys")
        return {key: plain_value(item, depth=depth + 1, budget=budget) for key, item in value.items()}
    raise ProtocolError(f"a value of type {type(value).__name__} came back")


def plain_tensor(tensor) -> torch.Tensor:
    if type(tensor) is not torch.Tensor:
        tensor = tensor.detach() if isinstance(tensor, torch.Tensor) else tensor
        if type(tensor) is not torch.Tensor:
            raise ProtocolError(f"a {type(tensor).__name__} came back instead of a plain tensor")
    if tensor.layout != torch.strided or tensor.dtype not in ALLOWED_DTYPES:
        raise ProtocolError(f"a tensor with layout {tensor.layout} and dtype {tensor.dtype} came back")
    if tensor.device.type == "meta":
        return torch.empty(tensor.shape, dtype=tensor.dtype, device="meta")
    if tensor.device.type != "cpu":
        raise ProtocolError(f"a tensor on {tensor.device} came back")
    return tensor.detach().clone().contiguous()


def checked(value, kind, what: str):
    """value if it is of kind (a type or tuple of types), else ProtocolError."""
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,))):
        raise ProtocolError(f"{what} has type {type(value).__name__}")
    return value


def text(value, what: str, limit: int = MAX_TEXT) -> str:
    checked(value, str, what)
    return value if len(value) <= limit else value[:limit] + " [...]"
