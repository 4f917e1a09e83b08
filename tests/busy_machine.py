"""A busy machine on demand: processes that compute without end, pinned to one CPU beside the code under test."""
from __future__ import annotations

import contextlib
import os

import pytest

from grader.contain import processes

# Spinners beside the code under test on its CPU: code that computes c CPU-seconds there takes about
# (SPINNERS + 1) x c of wall time, a wait of SPINNERS x c that the load-free clock must not count.
SPINNERS = 5


@contextlib.contextmanager
def busy_cpu(cpu: int, spinners: int = SPINNERS):
    """Load on one CPU: `spinners` processes that compute without end, pinned to it."""
    pids = []
    try:
        for _ in range(spinners):
            pid = os.fork()
            if pid == 0:
                try:
                    os.setsid()   # a session each: where the kernel shares CPUs out by session (autogroup), each
                    os.sched_setaffinity(0, {cpu})   # spinner weighs as much as the code under test
                    while True:
                        pass
                finally:
                    os._exit(0)
            pids.append(pid)
        yield
    finally:
        for pid in pids:
            os.kill(pid, 9)
            os.waitpid(pid, 0)


def reports_run_delay() -> None:
    """Skip the test where the kernel reports no run-queue delay: there the load-free clock is the wall clock."""
    if processes.run_delay_seconds(os.getpid()) is None:
        pytest.skip("this kernel reports no run-queue delay (/proc/PID/schedstat): wall-clock time is all there is")
