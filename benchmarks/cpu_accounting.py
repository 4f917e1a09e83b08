"""CPU seconds of a whole process tree, counted by the kernel: the benchmarks' one way to measure CPU.

    with CpuGroup() as group:                  # a new, empty CPU-accounting cgroup (None where none can be made)
        subprocess.run(cmd, preexec_fn=group.join)   # the child, and all it starts, are counted there
        group.seconds()

Where this process may make a cgroup (root; cgroup v1's cpuacct or v2's cpu.stat), every process the command
starts is counted, also those that outlive their parent (the engine's template, its workers and sandboxes are
not the command's own children, so resource.getrusage(RUSAGE_CHILDREN) never sees them). Elsewhere
`CpuGroup()` is None, and `children_seconds()` (the children this process waited for) is the fallback.
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import resource
import time

V1 = pathlib.Path("/sys/fs/cgroup/cpuacct")
V2 = pathlib.Path("/sys/fs/cgroup")


class CpuGroup:
    """One cgroup of CPU accounting, removed on exit (it must be empty then: its processes have ended)."""

    def __new__(cls):
        for root, usage in ((V1, "cpuacct.usage"), (V2, "cpu.stat")):
            folder = root / f"benchmark-{os.getpid()}-{time.monotonic_ns()}"
            try:
                folder.mkdir()
            except OSError:
                continue
            if (folder / usage).is_file():
                group = super().__new__(cls)
                group.folder, group.usage, group.joined = folder, usage, []
                return group
            folder.rmdir()
        return None

    def __enter__(self) -> CpuGroup:
        return self

    def __exit__(self, *exc) -> None:
        for pid, before in self.joined:   # a running process that joined goes back where it was
            with contextlib.suppress(OSError):
                (before / "cgroup.procs").write_text(str(pid))
        with contextlib.suppress(OSError):
            self.folder.rmdir()

    def join(self, pid: int = 0) -> None:
        """Move a process into the group: 0, the calling one (a preexec_fn, in a child before exec), or a running
        process, which goes back to its own group when this one is removed."""
        if pid:
            self.joined.append((pid, self._group_of(pid)))
        (self.folder / "cgroup.procs").write_text(str(pid))

    def _group_of(self, pid: int) -> pathlib.Path:
        """The folder of the group of this hierarchy that pid is in now (from /proc/PID/cgroup)."""
        for line in pathlib.Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if ("cpuacct" in controllers.split(",")) == (self.usage == "cpuacct.usage") and \
                    (self.usage == "cpuacct.usage" or controllers == ""):
                return self.folder.parent / path.lstrip("/")
        return self.folder.parent

    def seconds(self) -> float:
        text = (self.folder / self.usage).read_text()
        if self.usage == "cpuacct.usage":
            return int(text) / 1e9
        return int(dict(line.split() for line in text.splitlines())["usage_usec"]) / 1e6


def children_seconds() -> float:
    """CPU seconds of every child process waited for so far (each with the children it waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def own_and_children_seconds() -> float:
    """This process's CPU seconds and its waited-for children's."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime + children_seconds()
