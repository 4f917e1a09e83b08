"""Forgery (issue 20, class 3): make the grader report its own failure.

At import, before the sandbox has said Ready, this writes into every socket it holds a well-formed
`broken` frame, the message only the engine may send when a sandbox cannot lock itself down. Believed,
the row would read "grader error: ...", be graded again on every resume, and Gradescope would tell the
student the grader failed. The engine's own first frame (`locked`) comes before any student code runs,
so a `broken` after it is refused as tampering and the import counts as the student's failure.
"""
import json
import os
import stat
import struct

TEXT = "forged by the submission: the sandbox could not apply its plan"


def _frame() -> bytes:
    header = json.dumps({"value": {"dict": [["kind", "broken"], ["reason", TEXT]]}, "tensors": []}).encode()
    body = struct.pack("!I", len(header)) + header
    return struct.pack("!Q", len(body)) + body


def run():
    for fd in range(3, 64):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.write(fd, _frame())
        except OSError:
            pass
