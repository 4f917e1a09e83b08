"""How long the project's tests wait for a child process (a command, a kernel, a batch) before calling it hung.

A safety net, never a budget: the suite must pass on a 2-core machine at a load average of 30, where a command
that takes 20 s on a quiet machine can take ten minutes. A test that waits for something asserts what it
produced, never how long it took (speed is measured by benchmarks/, side by side).
"""
import time

SAFETY_NET_S = 3600


def process_state(pid: int) -> str:
    """The process's state letter from /proc (S: asleep, R: running or waiting for a CPU, Z: a zombie nobody has
    reaped), or "" once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


def wait_until_asleep(pids) -> None:
    """Return once every one of pids sleeps (blocked, its CPU time and run-queue delay standing still)."""
    deadline = time.monotonic() + SAFETY_NET_S
    while any(process_state(pid) != "S" for pid in pids):
        assert time.monotonic() < deadline, "the processes never went to sleep"
        time.sleep(0.001)
