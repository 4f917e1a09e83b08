"""Cheat (issue 11, class 2): make the trusted grader allocate gigabytes with a tiny answer.

Each call first writes, straight into the sandbox's socket (fd 3), a frame of about 100 bytes whose
one tensor claims a billion float32 elements over 4 bytes of data, then behaves like the stub.
The trusted side checks element counts against the bytes before it builds anything: refused.
"""
from ._common import frame, install_sending_first


def install(api):
    header = {"value": {"dict": [["kind", "call-reply"], ["value", {"tensor": 0}]]},
              "tensors": [["float32", [1_000_000_000], "cpu"]]}
    install_sending_first(api, frame(header, b"\0\0\0\0"))
