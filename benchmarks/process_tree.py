"""Wall time and peak memory of a command's whole process tree, optionally inside a container like Gradescope's.

    measure(command, cwd, env, container=None) -> Measurement

Memory is sampled every 20 ms from /proc: the sum over the command and all its descendants of PSS
(proportional set size: a page shared by n processes counts 1/n to each, so the sum counts it once,
as a container's memory limit does), of its anonymous part (heap and stacks: what cannot be dropped and
read back from disk under a memory limit, the floor a container must hold), and, for comparison, of RSS
(which counts shared pages in every process that maps them: torch's libraries in each forked worker).
A spike shorter than 20 ms can be missed.

container=Container(cpus, mib): the command runs in a fresh cgroup (v1, root only) with a CPU quota and a
memory limit, as Gradescope runs an autograder (its default: 0.5 CPU, 768 MB); the cgroup's own peak
(which also counts page cache, reclaimed under the limit rather than failing) and whether the kernel's
OOM killer fired are reported with the samples.
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import subprocess
import tempfile
import time
from dataclasses import dataclass

INTERVAL_S = 0.02
CGROUP = pathlib.Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class Container:
    cpus: float     # CPU quota in cores
    mib: int        # memory limit in MiB (Gradescope's "768MB" setting is 768 MiB)

    def __str__(self) -> str:
        return f"{self.cpus:g} CPU, {self.mib} MiB"


@dataclass(frozen=True)
class Measurement:
    seconds: float
    returncode: int
    output: str
    peak_pss_mib: float
    peak_anon_mib: float                 # anonymous PSS at its own peak
    peak_rss_mib: float
    processes: int                       # processes in the tree at the PSS peak
    cgroup_peak_mib: float | None = None
    oom_killed: bool | None = None


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = pathlib.Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    return children


def tree(pid: int) -> list[int]:
    """pid and all its descendants (those in other PID namespaces included: /proc shows them all)."""
    children, found = _children(), [pid]
    for process in found:
        found += children.get(process, [])
    return found


ROLLUP_FIELDS = ("Pss:", "Pss_Anon:", "Rss:")


def memory_kib(pid: int) -> tuple[int, int, int]:
    """(PSS, anonymous PSS, RSS) of one process in KiB; zeros if it is gone."""
    values = dict.fromkeys(ROLLUP_FIELDS, 0)
    try:
        for line in pathlib.Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            name, _, rest = line.partition(" ")
            if name in values:
                values[name] = int(rest.split()[0])
    except (OSError, ValueError):
        pass
    return tuple(values.values())


class _Cgroup:
    """A fresh cgroup v1 pair (cpu, memory) with the container's quota and limit, removed on exit."""

    def __init__(self, container: Container):
        name = f"bench-{os.getpid()}-{time.monotonic_ns()}"
        self.container = container
        self.cpu, self.memory = CGROUP / "cpu" / name, CGROUP / "memory" / name

    def __enter__(self):
        self.cpu.mkdir()
        self.memory.mkdir()
        period = int((self.cpu / "cpu.cfs_period_us").read_text())
        (self.cpu / "cpu.cfs_quota_us").write_text(str(int(self.container.cpus * period)))
        (self.memory / "memory.limit_in_bytes").write_text(str(self.container.mib << 20))
        return self

    def join(self) -> None:
        """Runs in the child before exec: the command and all it starts are inside."""
        for group in (self.cpu, self.memory):
            (group / "cgroup.procs").write_text(str(os.getpid()))

    def peak_mib(self) -> float:
        return int((self.memory / "memory.max_usage_in_bytes").read_text()) / 2**20

    def oom_killed(self) -> bool:
        control = dict(line.split() for line in (self.memory / "memory.oom_control").read_text().splitlines())
        return int(control.get("oom_kill", 0)) > 0

    def __exit__(self, *exc):
        for group in (self.cpu, self.memory):
            for _ in range(50):   # the last processes may take a moment to leave
                try:
                    group.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)


def available(container: Container | None) -> str | None:
    """Why a container cannot be made here (None: it can)."""
    if container is None:
        return None
    if os.geteuid() != 0:
        return "needs root"
    if not (CGROUP / "cpu" / "cgroup.procs").is_file() or not (CGROUP / "memory" / "cgroup.procs").is_file():
        return "needs cgroup v1 cpu and memory controllers at /sys/fs/cgroup"
    return None


def measure(command: list[str], cwd, env: dict | None = None, container: Container | None = None) -> Measurement:
    reason = available(container)
    if reason:
        raise RuntimeError(f"cannot emulate a container: {reason}")
    cgroup = _Cgroup(container) if container else None
    # Output goes to a file: a pipe nobody reads while sampling could fill and stall the command.
    with cgroup or contextlib.nullcontext(), tempfile.TemporaryFile("w+") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=cgroup.join if cgroup else None)
        peak_pss = peak_anon = peak_rss = processes = 0
        while proc.poll() is None:
            pids = tree(proc.pid)
            pss, anon, rss = (sum(values) for values in zip(*map(memory_kib, pids), strict=True))
            if pss > peak_pss:
                peak_pss, processes = pss, len(pids)
            peak_anon, peak_rss = max(peak_anon, anon), max(peak_rss, rss)
            time.sleep(INTERVAL_S)
        seconds = time.perf_counter() - start
        log.seek(0)
        extra = {"cgroup_peak_mib": cgroup.peak_mib(), "oom_killed": cgroup.oom_killed()} if cgroup else {}
        return Measurement(seconds, proc.returncode, log.read(), peak_pss / 1024, peak_anon / 1024, peak_rss / 1024,
                           processes, **extra)
