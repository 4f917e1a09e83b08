"""A class-level step run like a submission: in a child process of its own, within limits of its own.

    value = bounded.run(step, StepLimits(...))   # step() -> a JSON value, computed in a forked child

The steps that read every submission's text after the last result (the similarity report) run in the batch's
command: what one hostile submission makes them cost must neither hold the batch nor take its memory. The child
gets an address-space limit and a CPU-time limit (rlimits: a helper it forks inherits them, each for itself),
and the batch waits for it at most a net of load-free time (load_free.py: a busy machine does not reach it).
Whatever stops it, the batch carries on: run() raises Stopped, saying why, and the caller says so.
"""
from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import signal
from dataclasses import dataclass

from grader.contain import processes
from grader.contain.load_free import LoadFreeClock

MAX_RESULT_BYTES = 16 << 20


@dataclass(frozen=True)
class StepLimits:
    memory_bytes: int          # each process's address space (RLIMIT_AS)
    cpu_seconds: int           # each process's CPU time (RLIMIT_CPU)
    load_free_seconds: float   # the whole step's wall-clock time, less its waits for a busy machine's CPU


class Stopped(Exception):
    """The step did not finish within its limits (or failed): str() says why, in a few words."""


def run(step, limits: StepLimits):
    """step()'s value, computed in a forked child within limits; raises Stopped."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: limits first, then the step; never returns
        code = 1
        try:
            os.close(read_end)
            os.setpgid(0, 0)   # the batch can kill it and its helpers in one go
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            # SIGXCPU at the soft limit ends it (a hard limit reached first would be a SIGKILL, said less clearly)
            resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 2))
            signal.signal(signal.SIGXCPU, signal.SIG_DFL)
            try:
                data = json.dumps({"value": step()})
            except MemoryError:
                data = json.dumps({"error": f"it ran out of memory (limit {limits.memory_bytes / 2**30:g} GiB)"})
            except Exception as error:  # noqa: BLE001 - said in the batch's output, which carries on
                data = json.dumps({"error": f"{type(error).__name__}: {error}"[:300]})
            view = memoryview(data.encode())
            while view:
                view = view[os.write(write_end, view):]
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with contextlib.suppress(OSError):   # the child does it too: whichever runs first
        os.setpgid(pid, pid)
    try:
        data, timed_out = _collect(read_end, pid, limits.load_free_seconds)
    finally:
        os.close(read_end)
        processes.kill_group(pid)
        _, status = os.waitpid(pid, 0)
    if timed_out:
        raise Stopped(f"it took longer than {limits.load_free_seconds:g} s")
    if os.WIFSIGNALED(status):
        signal_number = os.WTERMSIG(status)
        raise Stopped(f"it used more than {limits.cpu_seconds} s of CPU time" if signal_number == signal.SIGXCPU else
                      f"it was killed ({signal.Signals(signal_number).name})")
    try:
        answer = json.loads(data)
    except ValueError:
        raise Stopped("it ended without a result") from None
    if "error" in answer:
        raise Stopped(answer["error"])
    return answer["value"]


def _collect(fd: int, pid: int, net: float) -> tuple[bytes, bool]:
    """Everything the child writes until it closes its end, and whether the net was reached first."""
    clock, chunks, size = LoadFreeClock(pid), [], 0
    while True:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks), False
            size += len(chunk)
            if size > MAX_RESULT_BYTES:
                return b"", False
            chunks.append(chunk)
        elif clock.elapsed() > net:
            return b"", True
