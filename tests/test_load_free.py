"""The load-free clock (grader/contain/load_free.py): wall-clock time a busy machine cannot stretch."""
from __future__ import annotations

import os
import time

import pytest

from grader.contain import processes
from grader.contain.load_free import LoadFreeClock
from tests.busy_machine import busy_cpu, reports_run_delay
from tests.fake_sandbox import spin_cpu_seconds
from tests.patience import wait_until_asleep


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


def _read_until_done(pid: int, through_readings: bool = False) -> tuple[float, float]:
    """(the clock's reading, wall-clock seconds) when pid ends, reading it ten times a second as the engine does.
    through_readings: the clock is given one walk's readings (processes.read_tree), as the sandbox gateway gives it,
    rather than walking /proc itself."""
    clock = LoadFreeClock(pid, processes.read_tree(pid).waits) if through_readings else LoadFreeClock(pid)
    reading = 0.0
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        reading = clock.elapsed(processes.read_tree(pid).waits) if through_readings else clock.elapsed()
        time.sleep(0.1)
    return reading, time.monotonic() - clock.started


COMPUTE_S = 0.3   # CPU-seconds of the process under test, on the spinners' CPU


def _computes():
    spin_cpu_seconds(COMPUTE_S)


def _waits_for_a_child_that_computes():
    child = _forked(_computes)
    os.waitpid(child, 0)


@pytest.mark.slow
@pytest.mark.parametrize(("body", "through_readings"), [(_computes, False), (_computes, True),
                                                        (_waits_for_a_child_that_computes, False)],
                         ids=["computing-own-walks", "computing-box-readings", "its-child-own-walks"])
def test_time_spent_waiting_for_a_busy_cpu_is_not_counted(body, through_readings):
    """Neither a process's own wait for a CPU nor, over an engine's tree, its parent's wait for it: the tree is held
    back while any one process of it is (a parent that only waits for its child is not sleeping on its own
    account)."""
    reports_run_delay()
    with busy_cpu(0):
        reading, wall = _read_until_done(_forked(body), through_readings)
    assert wall > 4 * COMPUTE_S, f"the load did not hold the process back ({wall:.1f} s)"
    assert reading < 2.5 * COMPUTE_S, (reading, wall)


@pytest.mark.slow
def test_in_a_box_the_wait_of_a_process_it_started_is_its_own():
    """The readings of a box (processes.read_tree) forgive the waits of the processes the engine started only: a
    child the box started waits behind whatever the box runs beside it (a laggard at nice 19 behind its own
    spinners held a call 334 s past its limits), so its wait counts, as the parent's sleep does. The defence off
    (every process's wait forgiven, as over an engine's tree): the same run reads as a fraction of its time."""
    reports_run_delay()
    with busy_cpu(0):
        reading, wall = _read_until_done(_forked(_waits_for_a_child_that_computes), through_readings=True)
        off, off_wall = _read_until_done(_forked(_waits_for_a_child_that_computes), through_readings=False)
    assert wall > 4 * COMPUTE_S and off_wall > 4 * COMPUTE_S, f"the load did not hold the child back ({wall:.1f} s)"
    assert reading > 0.6 * wall and off < 2.5 * COMPUTE_S, (reading, wall, off, off_wall)


@pytest.mark.slow
def test_sleeping_is_counted_however_busy_the_machine():
    with busy_cpu(0):
        reading, wall = _read_until_done(_forked(lambda: time.sleep(0.8)))
    assert reading > 0.65, (reading, wall)


@pytest.mark.slow
def test_without_the_kernels_run_queue_delay_it_is_the_wall_clock(monkeypatch):
    """The defence switched off: the same loaded computation reads as its whole wall-clock time."""
    monkeypatch.setattr(processes, "run_delay_seconds", lambda pid, files=None: None)
    with busy_cpu(0):
        reading, wall = _read_until_done(_forked(_computes))
    assert reading > 4 * COMPUTE_S and not LoadFreeClock(os.getpid()).held, (reading, wall)


def test_one_reading_holds_the_trees_cpu_time_and_the_engines_processes_waits():
    """processes.read_tree, the gateway's one walk after each call: the CPU time tree_cpu_seconds gives (a child's
    and a grandchild's too), and the wait of the box's first process as run_delay_seconds reads it; not those of
    the processes it started (processes.engine_processes)."""
    reports_run_delay()
    release_read, release_write = os.pipe()
    ready_read, ready_write = os.pipe()

    def parent_of_one():
        def grandchild():
            spin_cpu_seconds(0.2)
            os.write(ready_write, b"x")
            os.read(release_read, 1)
        _forked(grandchild)
        spin_cpu_seconds(0.2)
        os.write(ready_write, b"x")
        os.read(release_read, 1)

    pid = _forked(parent_of_one)
    try:
        for _ in range(2):   # both have computed (either may finish first on a busy machine) ...
            os.read(ready_read, 1)
        members = processes.descendants(pid)
        wait_until_asleep(members)   # ... and wait now, their figures standing still
        reading = processes.read_tree(pid)
        assert len(members) >= 2 and reading.waits == {pid: processes.run_delay_seconds(pid)}, (members, reading)
        assert reading.cpu == pytest.approx(processes.tree_cpu_seconds(pid), abs=0.02) and reading.cpu >= 0.3
        kept = processes.ProcFiles(keep=64)   # the gateway's way: through descriptors kept open, read again
        assert processes.read_tree(pid, kept) == processes.read_tree(pid, kept) == reading and kept.kept
        kept.close()
    finally:
        os.write(release_write, b"xx")
        os.waitpid(pid, 0)


def test_kept_descriptors_read_the_file_afresh_and_stay_with_their_process():
    """processes.ProcFiles: a kept /proc descriptor gives what the file says now (a computing child's CPU time
    grows), reads as gone once its process has ended, and no more are kept than asked."""
    release_read, release_write = os.pipe()

    def computing():
        spin_cpu_seconds(0.3)
        os.read(release_read, 1)

    pid = _forked(computing)
    kept = processes.ProcFiles(keep=2)
    try:
        first = processes.cpu_seconds(pid, kept)
        while processes.cpu_seconds(pid) < first + 0.1:
            time.sleep(0.01)
        assert processes.cpu_seconds(pid, kept) >= first + 0.1   # the same descriptor, the file as it is now
        assert processes.run_delay_seconds(pid, kept) is not None or processes.run_delay_seconds(pid) is None
        processes.descendants(pid, kept)
        assert len(kept.kept) == 2
    finally:
        os.write(release_write, b"x")
        os.waitpid(pid, 0)
    assert processes.cpu_seconds(pid, kept) == 0.0 and f"/proc/{pid}/stat" not in kept.kept   # gone: dropped
    kept.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="a PID namespace of its own needs root")
def test_the_init_of_a_boxs_pid_namespace_is_one_of_the_engines_processes():
    """With the pid layer the box's first process keeps the box and its namespace's init runs the calls: both are
    the engine's; a child of the init is the box's own."""
    from grader.contain import kernel

    release_read, release_write = os.pipe()

    def keeper():
        kernel.unshare(kernel.CLONE_NEWPID)
        init = os.fork()
        if init == 0:
            _forked(lambda: os.read(release_read, 1))
            os.read(release_read, 1)
            os._exit(0)
        os.waitpid(init, 0)

    pid = _forked(keeper)
    try:
        while len(members := processes.descendants(pid)) < 3:
            time.sleep(0.01)
        assert processes.engine_processes(pid, members) == members[:2], members   # the keeper, the init
    finally:
        os.write(release_write, b"xx")
        os.waitpid(pid, 0)
