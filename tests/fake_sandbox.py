"""Forked stand-ins for sandboxes, handed to SandboxGateway in place of the worker's Spawner."""
from __future__ import annotations

import os
import socket
import time

from grader.contain import processes
from grader.contain.limits import Limits
from grader.gateway import StudentError
from grader.gateway.client import SandboxGateway, SessionLog
from grader.wire import messages, protocol


class FakeSpawner:
    """The n-th stand-in (n from 1) says Ready (see greeting), then answers each request with ValueError("sandbox n")
    after `behaviour` seconds of sleeping (no CPU), after "compute:S" S seconds of its own CPU time, or spins forever
    ("spin"). Those from number second_warm_from on say that the second device is warm in them. cpu: the one
    CPU they run on (None: any)."""

    def __init__(self, behaviour: str = "0", second_warm_from: int = 1, greeting: bytes | None = None,
                 cpu: int | None = None, later_greeting: bytes | None = None):
        self.behaviour, self.second_warm_from, self.cpu = behaviour, second_warm_from, cpu
        # What a real sandbox sends before any call: Locked, then (after the import) Ready. later_greeting: what
        # the second and every later stand-in sends instead.
        self.greeting = messages.Locked().encode() + messages.Ready().encode() if greeting is None else greeting
        self.later_greeting = later_greeting
        self.pids: list[int] = []

    def spawn(self, second: bool = True):
        number = len(self.pids) + 1
        ours, theirs = socket.socketpair()
        out_read, out_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:   # a forked copy of pytest: it must never return into the test run
                os.setsid()
                if self.cpu is not None:
                    os.sched_setaffinity(0, {self.cpu})
                ours.close()
                theirs.sendall(self.later_greeting if number > 1 and self.later_greeting else self.greeting)
                reader = protocol.FrameReader(theirs)
                reader.read(None)   # the trusted side's Go (a real sandbox imports the submission only then)
                while True:
                    reader.read(None)
                    while self.behaviour == "spin":
                        pass
                    if self.behaviour.startswith("compute:"):
                        spin_cpu_seconds(float(self.behaviour.removeprefix("compute:")))
                    else:
                        time.sleep(float(self.behaviour))
                    theirs.sendall(messages.Failure("ValueError", f"sandbox {number}", []).encode())
            finally:
                os._exit(0)
        theirs.close()
        os.close(out_write)
        self.pids.append(pid)
        return pid, ours, out_read, number >= self.second_warm_from

    def reap(self):
        processes.reap(self.pids)


def spin_cpu_seconds(seconds: float) -> None:
    """Compute for this many seconds of this process's own CPU time, however long that takes."""
    until = time.process_time() + seconds
    while time.process_time() < until:
        pass


def failing_call(spawner: FakeSpawner, limits: Limits, log: SessionLog) -> StudentError:
    """The StudentError of student.scaled_scores() called through a SandboxGateway on the spawner's stand-ins."""
    gateway = SandboxGateway(spawner, limits, log)
    try:
        gateway.call("scaled_scores", ())
    except StudentError as error:
        return error
    finally:
        gateway.close()
        spawner.reap()
    raise AssertionError("the call did not fail")


def calls_in_a_row(gateway: SandboxGateway, times: int = 3, *, afresh_between: bool = False) -> list[StudentError]:
    """student.scaled_scores() called `times` times through the gateway (start_afresh between them if asked): the
    StudentError of each call that failed."""
    errors = []
    for _ in range(times):
        try:
            gateway.call("scaled_scores", ())
        except StudentError as error:
            errors.append(error)
        if afresh_between:
            gateway.start_afresh()
    return errors
