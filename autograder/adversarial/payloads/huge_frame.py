"""Cheat (issue 11, class 2): make the trusted grader allocate gigabytes with a tiny answer.

Each call first writes, straight into the sandbox's socket (fd 3), a frame of about 100 bytes whose
one tensor claims a billion float32 elements over 4 bytes of data, then behaves like the stub.
The trusted side checks element counts against the bytes before it builds anything: refused.
"""
import json
import os
import struct

from ._common import FUNCTIONS, stub

SOCKET_FD = 3


def _frame() -> bytes:
    header = json.dumps({"value": {"dict": [["kind", "call-reply"], ["value", {"tensor": 0}]]},
                         "tensors": [["float32", [1_000_000_000], "cpu"]]}).encode()
    body = struct.pack("!I", len(header)) + header + b"\0\0\0\0"
    return struct.pack("!Q", len(body)) + body


def _sending(stub):
    def call(*args, **kwargs):
        try:
            os.write(SOCKET_FD, _frame())
        except OSError as error:
            print(f"could not write to the socket: {error}")
        return stub(*args, **kwargs)
    return call


def install(api):
    for name in FUNCTIONS:
        api[name] = _sending(stub(api, name))
