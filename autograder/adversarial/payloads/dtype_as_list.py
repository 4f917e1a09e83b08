"""Cheat (issue 20, class 6): an answer the decoder did not foresee.

Each call first writes, straight into the sandbox's socket (fd 3), a well-framed answer whose tensor
table names its dtype as a list, then behaves like the stub. A decoder that indexes a table with it
raises TypeError instead of refusing: every failure to decode must be a refusal, flagged.
"""
from ._common import frame, install_sending_first


def install(api):
    header = {"value": {"dict": [["kind", "call-reply"], ["value", {"tensor": 0}]]},
              "tensors": [[["float32"], [1], "cpu"]]}
    install_sending_first(api, frame(header, b"\0\0\0\0"))
