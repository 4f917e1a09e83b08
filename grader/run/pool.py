"""Grading processes for a batch: a clean template forks one worker per submission.

The template is a new program (fork, then exec of a fresh Python with an environment and a command
line of its own: template_boot.py), started before the batch reads anything about the class (names, sources, earlier
scores): a worker, and every sandbox it forks, holds nothing about other students in memory, and
nothing of the grader's environment or command line either (a forked copy of the batch would keep
both on its stack, readable in /proc/self/environ and /proc/self/cmdline, tokens and paths among
them). What the template needs (the module path and the run's settings) it reads from its socket.
The batch itself never imports torch: the template does, and warms itself up, while the batch probes
the kernel's layers and reads the class. One process per submission also means a worker that dies
takes only its own submission with it: the batch sees the result pipe close without an outcome.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from grader.contain import processes
from grader.contain.load_free import LoadFreeClock
from grader.run import template_boot
from grader.run.run_settings import RunSettings

if TYPE_CHECKING:   # its import reads the spec (15 ms) that the template's fork need not wait for
    from grader.run.outcome import Outcome

PID = struct.Struct("!q")
LENGTH = struct.Struct("!I")   # of the settings, the one message before the jobs


@dataclass
class Job:
    pid: int            # the worker (leader of its own process group)
    fd: int             # read end of its result pipe
    clock: LoadFreeClock   # since it started: its tree's time, not counting waits for a busy machine's CPU
    gpu: int | None = None   # the GPU it was given (a GPU run)
    data: bytearray = field(default_factory=bytearray)

    def outcome(self) -> Outcome:
        """The worker's outcome, or a grader error if it died without one."""
        from grader.run.outcome import Outcome

        try:
            return Outcome.from_json(bytes(self.data).decode())
        except (ValueError, UnicodeDecodeError):
            return Outcome.failed("grader error: the grading process ended without a result")


class Template:
    """A forked process with torch and the sandbox's code loaded and warm (pytest and the second device too,
    once a second worker is wanted, or a first that others follow), and nothing else.

    It starts before the run's settings are known (the command's first act, template_boot.start, before the rest
    of the engine loads), so that torch's import runs side by side with loading the command, reading the
    arguments, probing the kernel's layers and finding the class; configure hands it the settings, before the
    first job. Closing it twice is harmless."""

    def __init__(self, started: tuple[int, int] | None = None):
        """started: the template that template_boot.start() began (the command's first act); None: start it now."""
        self.pid, control = started or template_boot.start()
        self.control = socket.socket(fileno=control)
        self.closed = False

    def configure(self, settings: RunSettings) -> None:
        self._send(settings.to_json())

    def _send(self, text: str) -> None:
        data = text.encode()
        self.control.sendall(LENGTH.pack(len(data)) + data)

    def start(self, source: str, keep: str | None = None, gpu: int | None = None, *, more: bool = False) -> Job:
        """Grade source in a new worker; keep: a folder for its pytest log and its sandboxes' output; gpu: the GPU
        its trusted process and sandboxes are given (a GPU run); more: other jobs follow this one."""
        read_end, write_end = os.pipe()
        given = b"" if gpu is None else str(gpu).encode()
        fields = [os.fsencode(source), os.fsencode(keep or ""), given]
        try:
            socket.send_fds(self.control, [(b"1" if more else b"0") + b"\0".join(fields)], [write_end])
        finally:
            os.close(write_end)
        reply = self.control.recv(PID.size, socket.MSG_WAITALL)
        if len(reply) != PID.size:
            os.close(read_end)
            raise RuntimeError("the grading template process went away")
        pid = PID.unpack(reply)[0]
        return Job(pid, read_end, LoadFreeClock(pid), gpu)

    def close(self) -> None:
        """After the last job the template's workers are all done, so it goes at once (it may still be warming
        up for jobs that will not come); on an interrupted run its workers go with it (parent-death signal)."""
        if self.closed:
            return
        self.closed = True
        self.control.close()
        os.kill(self.pid, signal.SIGKILL)
        # Reaped beside the rest of the run's ending: the kernel takes a torch process's memory back in about 15 ms.
        threading.Thread(target=_reap, args=(self.pid,), name="reap-template", daemon=True).start()


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):   # reaped already, by a wait for any child elsewhere in the process
        os.waitpid(pid, 0)


def start_template(control: socket.socket, parent: int) -> None:
    """The template program's entry (template_boot.BOOT), then the template's loop."""
    _template_main(control, parent)


def _template_main(control: socket.socket, parent: int) -> None:
    code = 0
    try:
        processes.die_with_parent(parent)
        from grader.run import worker  # torch: in the template, never in the batch

        sys.argv[:] = ["autograder-template"]
        settings = RunSettings.from_json(_receive(control))   # sent once the batch has probed the kernel's layers
        cuda = bool(settings.gpus)   # a GPU run: no emulated second device anywhere (it would take CUDA's place)
        worker.prepare_template(full=False, cuda=cuda)   # a run's only worker starts sooner (see prepare_template)
        served = 0
        while True:
            message, fds, _flags, _addr = socket.recv_fds(control, 1 << 16, 1)
            if not message or len(fds) != 1:
                break
            more, message = message[:1] == b"1", message[1:]
            if served or more:   # a second worker is wanted: from then on all start warm (prepare_template)
                worker.prepare_template(cuda=cuda)
            served += 1
            source, keep, given = (os.fsdecode(part) for part in message.split(b"\0", 2))
            template = os.getpid()
            pid = os.fork()
            if pid == 0:
                control.close()
                _worker_main(source, keep or None, fds[0], settings, template, int(given) if given else None)
            os.close(fds[0])
            control.sendall(PID.pack(pid))
            processes.reap(block=False)
        processes.reap(block=True)
    except BaseException:  # noqa: BLE001 - the batch notices the closed socket
        code = 1
    finally:
        os._exit(code)


def _receive(control: socket.socket) -> str:
    (size,) = LENGTH.unpack(control.recv(LENGTH.size, socket.MSG_WAITALL))
    return control.recv(size, socket.MSG_WAITALL).decode()


def _worker_main(source: str, keep: str | None, result_fd: int, settings: RunSettings, parent: int,
                 gpu: int | None = None) -> None:
    code = 0
    try:
        from grader.run import worker

        processes.die_with_parent(parent)
        os.setpgid(0, 0)   # the batch can kill this worker and its trusted process in one go
        data = worker.grade_one(source, settings, private_fds=(result_fd,), keep=keep, gpu=gpu).to_json().encode()
        view = memoryview(data)
        while view:
            view = view[os.write(result_fd, view):]
        os.close(result_fd)   # the batch reads its end now, not once the kernel has taken this process's memory back
    except BaseException:  # noqa: BLE001 - no outcome written: the batch records a grader error
        code = 1
    finally:
        os._exit(code)
