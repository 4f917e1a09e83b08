"""Bounds a box cannot stretch (issue 48): CPU time that escapes the count, waits for a CPU that a box makes
itself, and a file made without a write.

- CPU in children the kernel reaps: with SIGCHLD ignored, a child's CPU time reaches no /proc file once it ends,
  so a box of short-lived spinners computes without a count. Its cgroup counts them (the memory layer,
  cgroupfs.py); where it has none, the seccomp filter lets it start no process but threads.
- A hold at nice 19: a child pinned to one CPU at the lowest priority is always runnable and rarely runs, because
  the box's own spinners (reaped, as above) keep that CPU busy; the load-free clock takes its wait for the
  machine's load and stands still while the call sleeps. The filter refuses every change of priority or affinity.
- bind() to a path makes a socket file (payloads/bind_plant.py).

Each attack falls back on spinning in its own process where a call is refused, so that it is stopped the same way
in every mode: its call times out. Switched off, each gets through: the reaped children with the memory and seccomp
layers off (a correct answer, no timeout: tests/test_box_bounds.py, on a smaller twin, as the zoo's batch with
layers off would pay its CPU once per sandbox), the file with every layer that keeps the files off (the zoo's
batch with layers off, tests/test_engine.py). The hold is stopped three times over: the filter refuses nice and
affinity, the spinners are counted or refused, and the load-free clock of a box forgives no wait of a process the
box started (processes.engine_processes; tests/test_load_free.py shows that rule with it off); with all three off
it held its call 35 s past the zoo's load-free cap of 30 s and scored 100.
"""
from __future__ import annotations

import textwrap

from autograder.adversarial.abuse import abusive
from autograder.adversarial.base import Context, Entry
from autograder.adversarial.escapes import at_import
from autograder.adversarial.expectations import Expectation

REAPED_CPU_S = 8.0    # CPU seconds burnt in reaped children: past the call's cap of the zoo (5 s)
HOLD_S = 35.0         # wall-clock seconds held: past the call's load-free cap of the zoo (6 x 5 s)
SPIN = """\
def _spin(seconds):
    _end = _time.process_time() + seconds
    while _time.process_time() < _end:
        pass"""
# Forks `count` children that run `work` and end; returns once all have (EOF on a pipe they hold): no wait(),
# which SIGCHLD ignored would refuse anyway.
CHILDREN = """\
def _children(count, work):
    _read, _write = _abuse_os.pipe()
    try:
        for _ in range(count):
            if _abuse_os.fork() == 0:
                try:
                    work()
                finally:
                    _abuse_os._exit(0)
    finally:
        _abuse_os.close(_write)
        _abuse_os.read(_read, 1)
        _abuse_os.close(_read)"""
REAPED = f"""\
if "reaped" not in _abuse_done:
    _abuse_done.add("reaped")
    import signal as _signal
    import time as _time
{textwrap.indent(SPIN, "    ")}
{textwrap.indent(CHILDREN, "    ")}
    _signal.signal(_signal.SIGCHLD, _signal.SIG_IGN)   # reaped by the kernel: their CPU time reaches no /proc file
    try:
        for _ in range(int({{cpu}} / 0.5)):
            _children(2, lambda: _spin(0.25))
    except OSError:                                    # no new process: the same work, counted, in this one
        _spin({{cpu}})"""
HOLD = f"""\
if "held" not in _abuse_done:
    _abuse_done.add("held")
    import signal as _signal
    import time as _time
{textwrap.indent(SPIN, "    ")}
{textwrap.indent(CHILDREN, "    ")}
    _cpu = min(_abuse_os.sched_getaffinity(0))
    _deadline = _time.monotonic() + {{hold}}
    try:   # may it change priority and affinity? (to what they are: nothing changes yet)
        _abuse_os.setpriority(_abuse_os.PRIO_PROCESS, 0, _abuse_os.getpriority(_abuse_os.PRIO_PROCESS, 0))
        _abuse_os.sched_setaffinity(0, _abuse_os.sched_getaffinity(0))
        _signal.signal(_signal.SIGCHLD, _signal.SIG_IGN)

        def _laggard():   # always runnable, rarely running: its wait is what the clock forgives
            _abuse_os.sched_setaffinity(0, [_cpu])
            _abuse_os.setpriority(_abuse_os.PRIO_PROCESS, 0, 19)
            while _time.monotonic() < _deadline:
                pass

        def _pinned():    # keeps the laggard's CPU busy, uncounted (reaped by the kernel)
            _abuse_os.sched_setaffinity(0, [_cpu])
            _spin(0.25)

        if _abuse_os.fork() == 0:
            try:
                _laggard()
            finally:
                _abuse_os._exit(0)
        while _time.monotonic() < _deadline:
            _children(2, _pinned)
    except OSError:                                    # refused: spin here, counted, until stopped
        while True:
            pass"""


def reaped(module: str, name: str, cpu_seconds: float = REAPED_CPU_S):
    """A writer of the reference whose `name` first burns cpu_seconds in children the kernel reaps."""
    return abusive(module, name, REAPED, cpu=repr(cpu_seconds))


def hold(module: str, name: str, seconds: float = HOLD_S):
    """A writer of the reference whose `name` first holds its call `seconds` behind a laggard at nice 19."""
    return abusive(module, name, HOLD, hold=repr(seconds))


def entries(context: Context) -> list[Entry]:
    counted = "memory,seccomp"   # its cgroup counts a child's CPU; without one, the filter refuses the child
    return [
        Entry(Expectation("abuse-cpu-in-reaped-children-in-apply_mask", "abuse", "timeout",
                          f"burns {REAPED_CPU_S:g} CPU-s in short-lived children reaped by the kernel (SIGCHLD "
                          "ignored): counted by its cgroup, or refused without one; the call times out",
                          baseline="reference", lost_parts=(2,), message="timed out", needs_layer=counted),
              reaped("masking.py", "apply_mask")),
        Entry(Expectation("abuse-hold-at-nice-19-in-scaled_dot_product_attention", "abuse", "timeout",
                          f"holds its call {HOLD_S:g} s behind a child pinned to one CPU at nice 19, kept waiting by "
                          "reaped spinners on that CPU: priority and affinity are refused, the spinners counted or "
                          "refused; the call times out", baseline="reference", lost_parts=(2,), message="timed out",
                          needs_layer=counted),
              hold("masking.py", "scaled_dot_product_attention")),
        Entry(Expectation("abuse-plant-a-file-by-bind", "abuse", "graded",
                          "binds one end of a socket pair to a path in the class's folder: refused wherever writing "
                          "is", baseline="reference", forbidden_paths=(str(context.root / "planted-by-bind"),),
                          defence="mnt,landlock,uid,seccomp", needs_layer="mnt,landlock,uid,seccomp"),
              at_import("bind_plant", solution=True)),
    ]
