"""The load-free clock (grader/contain/load_free.py): wall-clock time a busy machine cannot stretch."""
from __future__ import annotations

import os
import time

import pytest

from grader.contain import processes
from grader.contain.load_free import LoadFreeClock
from tests.busy_machine import busy_cpu, reports_run_delay
from tests.fake_sandbox import spin_cpu_seconds


def _forked(body) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.sched_setaffinity(0, {0})
            body()
        finally:
            os._exit(0)
    return pid


def _read_until_done(pid: int) -> tuple[float, float]:
    """(the clock's reading, wall-clock seconds) when pid ends, reading it ten times a second as the engine does."""
    clock = LoadFreeClock(pid)
    reading = 0.0
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        reading = clock.elapsed()
        time.sleep(0.1)
    return reading, time.monotonic() - clock.started


def _computes():
    spin_cpu_seconds(0.6)


def _waits_for_a_child_that_computes():
    child = _forked(_computes)
    os.waitpid(child, 0)


@pytest.mark.slow
@pytest.mark.parametrize("body", [_computes, _waits_for_a_child_that_computes], ids=["computing", "its-child"])
def test_time_spent_waiting_for_a_busy_cpu_is_not_counted(body):
    """Neither a process's own wait for a CPU nor its parent's wait for it: the tree is held back while any one
    process of it is (a parent that only waits for its child is not sleeping on its own account)."""
    reports_run_delay()
    with busy_cpu(0, spinners=7):
        reading, wall = _read_until_done(_forked(body))
    assert wall > 3.0, f"the load did not hold the process back ({wall:.1f} s)"
    assert reading < 1.5, (reading, wall)


@pytest.mark.slow
def test_sleeping_is_counted_however_busy_the_machine():
    with busy_cpu(0, spinners=7):
        reading, wall = _read_until_done(_forked(lambda: time.sleep(1.5)))
    assert reading > 1.3, (reading, wall)


@pytest.mark.slow
def test_without_the_kernels_run_queue_delay_it_is_the_wall_clock(monkeypatch):
    """The defence switched off: the same loaded computation reads as its whole wall-clock time."""
    monkeypatch.setattr(processes, "run_delay_seconds", lambda pid: None)
    with busy_cpu(0, spinners=7):
        reading, wall = _read_until_done(_forked(_computes))
    assert reading > 3.0 and not LoadFreeClock(os.getpid()).held, (reading, wall)
