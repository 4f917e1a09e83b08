"""Time that load cannot stretch: the wall-clock time of a process tree less the time it waited for a CPU.

A wall-clock limit stops correct code on a busy machine: at a load of 30 on 2 cores a process gets about a
fifteenth of a core. The kernel counts, per process, how long it was runnable but not running (its run-queue
delay). This clock subtracts that wait, so it advances while the tree computes, sleeps, or waits for anything
but a CPU, and stands still while the machine's load keeps the tree from running: code that sleeps is still
stopped, and load never stops anything.

    clock = LoadFreeClock(pid)   # starts now, over pid and every process below it
    clock.elapsed()              # seconds since, not counting the waits for a CPU seen since the last reading
    clock = LoadFreeClock(pid, reading.waits)   # the same, from a reading the caller took (processes.read_tree),
    clock.elapsed(later.waits)                  # ... which also holds the tree's CPU time: one walk of /proc for both
    clock.held                   # False where the kernel reports no run-queue delay: then it is wall-clock time
    kernel_reports_waits()       # whether it does, here

Each reading forgives, for the time since the reading before, the longest wait of any one process it is given
(a wait no longer than that time): while any of them is held back by load, the tree is. Over an engine's tree
(the batch's and the worker's clocks) that is every process; over a box (the readings processes.read_tree
gives the sandbox gateway) only the processes the engine started it with (processes.engine_processes): a process
the box started can be kept waiting by the box itself (spinners on its CPU), which is not the machine's load.
Waits of a process that ends between two readings are not seen, so the clock errs on the strict side, by at
most the time between readings.

What this clock believes, it reads from the kernel (run-queue delays); what it cannot tell apart from outside is
a wait the box made itself in a process the engine started (its threads' demand is its own threads', not a
process's): so the submission's grading also stops at a plain wall-clock net (Limits.wall_net), as the engine's
failure, graded again by the next run.
"""
from __future__ import annotations

import os
import time

from grader.contain import processes


class LoadFreeClock:
    def __init__(self, pid: int, waits: dict[int, float] | None = None):
        """waits: the tree's run-queue delays read when it last stopped running (processes.read_tree), so that the
        clock starts without a walk of /proc of its own; None: read them now."""
        self.pid = pid
        self.started = self.read_at = time.monotonic()
        self.forgiven = 0.0
        self.waits = self._waits() if waits is None else dict(waits)
        self.held = bool(self.waits)

    def _waits(self) -> dict[int, float]:
        return processes.run_delays(processes.descendants(self.pid))

    def elapsed(self, waits: dict[int, float] | None = None) -> float:
        """waits: the tree's run-queue delays just read by the caller (processes.read_tree); None: read them here."""
        now = time.monotonic()
        if self.held:
            waits = self._waits() if waits is None else waits
            longest = max((wait - self.waits.get(pid, 0.0) for pid, wait in waits.items()), default=0.0)
            self.forgiven += min(max(longest, 0.0), now - self.read_at)
            self.waits.update(waits)
        self.read_at = now
        return now - self.started - self.forgiven

    def past(self, net: float, wall_net: float) -> str:
        """Which net the tree has run past, in words ("" where none): `net` of load-free time, or `wall_net` of
        plain wall-clock time behind it, which no box can stretch (Limits.wall_net)."""
        if self.elapsed() > net:
            return f"{net:g} s, not counting waits for a busy machine's CPU"
        if time.monotonic() - self.started > wall_net:
            return f"{wall_net:g} s of wall-clock time"
        return ""


def kernel_reports_waits() -> bool:
    return processes.run_delay_seconds(os.getpid()) is not None
