"""Grading processes for a batch: a clean template forks one worker per submission.

The template is forked before the batch reads anything about the class (names, sources,
earlier scores), so a worker (and every sandbox it forks) holds nothing about other
students in memory. The batch itself never imports torch: the template does, and warms
itself up, while the batch probes the kernel's layers and reads the class. One process per
submission also means a worker that dies takes only its own submission with it: the
batch sees the result pipe close without an outcome.
"""
from __future__ import annotations

import os
import signal
import socket
import struct
import sys
from dataclasses import dataclass, field, replace

from autograder.engine import isolation, processes
from autograder.engine.outcome import Outcome
from autograder.engine.run_settings import Settings

PID = struct.Struct("!q")
PLAN_LENGTH = struct.Struct("!I")


@dataclass
class Job:
    pid: int            # the worker (leader of its own process group)
    fd: int             # read end of its result pipe
    deadline: float
    data: bytearray = field(default_factory=bytearray)

    def outcome(self) -> Outcome:
        """The worker's outcome, or a grader error if it died without one."""
        try:
            return Outcome.from_json(bytes(self.data).decode())
        except (ValueError, UnicodeDecodeError):
            return Outcome.failed("grader error: the grading process ended without a result")


class Template:
    """A forked process with torch and the sandbox's code loaded and warm (pytest and the second device too,
    once a second worker is wanted), and nothing else.

    It is forked before the kernel's layers are probed (settings.plan is None), so that torch's import and the
    probe run side by side; set_plan hands it the plan, before the first job."""

    def __init__(self, settings: Settings):
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        parent = os.getpid()
        self.pid = os.fork()
        if self.pid == 0:
            self.control.close()
            _template_main(theirs, settings, parent)
        theirs.close()

    def set_plan(self, plan: isolation.Plan) -> None:
        data = plan.to_json().encode()
        self.control.sendall(PLAN_LENGTH.pack(len(data)) + data)

    def start(self, source: str, deadline: float, keep: str | None = None) -> Job:
        """Grade source in a new worker; keep: a folder for its pytest log and its sandboxes' output."""
        read_end, write_end = os.pipe()
        try:
            socket.send_fds(self.control, [os.fsencode(source) + b"\0" + os.fsencode(keep or "")], [write_end])
        finally:
            os.close(write_end)
        reply = self.control.recv(PID.size, socket.MSG_WAITALL)
        if len(reply) != PID.size:
            os.close(read_end)
            raise RuntimeError("the grading template process went away")
        return Job(PID.unpack(reply)[0], read_end, deadline)

    def close(self) -> None:
        """After the last job the template's workers are all done, so it goes at once (it may still be warming
        up for jobs that will not come); on an interrupted run its workers go with it (parent-death signal)."""
        self.control.close()
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)


def _template_main(control: socket.socket, settings: Settings, parent: int) -> None:
    code = 0
    try:
        from autograder.engine import worker  # torch: in the template, never in the batch

        processes.die_with_parent(parent)
        sys.argv[:] = ["autograder-template"]
        settings = replace(settings, plan=isolation.Plan.from_json(_receive_plan(control)))
        worker.prepare_template(full=False)   # the first worker starts sooner (see prepare_template)
        served = 0
        while True:
            message, fds, _flags, _addr = socket.recv_fds(control, 1 << 16, 1)
            if not message or len(fds) != 1:
                break
            if served:
                worker.prepare_template()    # once a second worker is wanted: from then on all start warm
            served += 1
            source, keep = (os.fsdecode(part) for part in message.split(b"\0", 1))
            template = os.getpid()
            pid = os.fork()
            if pid == 0:
                control.close()
                _worker_main(source, keep or None, fds[0], settings, template)
            os.close(fds[0])
            control.sendall(PID.pack(pid))
            processes.reap(block=False)
        processes.reap(block=True)
    except BaseException:  # noqa: BLE001 - the batch notices the closed socket
        code = 1
    finally:
        os._exit(code)


def _receive_plan(control: socket.socket) -> str:
    (size,) = PLAN_LENGTH.unpack(control.recv(PLAN_LENGTH.size, socket.MSG_WAITALL))
    return control.recv(size, socket.MSG_WAITALL).decode()


def _worker_main(source: str, keep: str | None, result_fd: int, settings: Settings, parent: int) -> None:
    code = 0
    try:
        from autograder.engine import worker

        processes.die_with_parent(parent)
        os.setpgid(0, 0)   # the batch can kill this worker and its trusted process in one go
        data = worker.grade_one(source, settings, private_fds=(result_fd,), keep=keep).to_json().encode()
        view = memoryview(data)
        while view:
            view = view[os.write(result_fd, view):]
    except BaseException:  # noqa: BLE001 - no outcome written: the batch records a grader error
        code = 1
    finally:
        os._exit(code)
