"""Where the kernel's cgroup hierarchies are mounted, and the CPU time a box's cgroup has counted.

A box's cgroup (memcg.py makes it: the memory layer) counts the CPU time of every process that ever ran in it,
those that ended included, whoever reaped them or whether anyone did: a child whose parent ignores SIGCHLD is
reaped by the kernel, and its time then reaches no /proc file (processes.cpu_seconds reads a process's own time
and that of the children it waited for). cgroup v2 counts it in every group (cpu.stat's usage_usec, no
controller needed); cgroup v1 in the cpuacct hierarchy (cpuacct.usage), where memcg.py makes the box a group of
the same name. The trusted side finds the group from /proc/PID/cgroup (the kernel's word, not the box's), and
trusts only a box's own group (named box-...): before the box has joined it, it is in the grader's.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable

BOX_PREFIX = "box-"


def mounts() -> list[tuple[str, str, str, str]]:
    """(root, mount point, filesystem type, super options) of every mount, from /proc/self/mountinfo."""
    found = []
    with open("/proc/self/mountinfo") as handle:
        lines = handle.read().splitlines()
    for line in lines:
        fields = line.split()
        if "-" not in fields:
            continue
        tail = fields[fields.index("-") + 1:]
        found.append((unescape(fields[3]), unescape(fields[4]), tail[0], tail[2] if len(tail) > 2 else ""))
    return found


def unescape(text: str) -> str:
    """mountinfo writes a space, tab, newline and backslash in a path as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        text = text.replace(code, char)
    return text


def inside(point: str, root: str, path: str) -> str:
    """The folder of cgroup `path` under a mount of the hierarchy's `root` at `point`."""
    if root != "/" and (path == root or path.startswith(root + "/")):
        path = path[len(root):]
    return os.path.normpath(os.path.join(point, path.lstrip("/")))


@functools.cache
def _counting_mounts() -> dict[str, tuple[str, str]]:
    """{"v2": (root, point)} of the cgroup2 mount and {"v1": ...} of the v1 one with cpuacct, where mounted. The
    grader's mounts do not change while it runs: read once per process."""
    found: dict[str, tuple[str, str]] = {}
    for root, point, kind, options in mounts():
        if kind == "cgroup2":
            found.setdefault("v2", (root, point))
        elif kind == "cgroup" and "cpuacct" in options.split(","):
            found.setdefault("v1", (root, point))
    return found


def box_cpu_seconds(pid: int, read: Callable[[str], bytes | None]) -> float | None:
    """CPU seconds counted by the box group process pid is in (read: how the caller reads a file, processes.ProcFiles
    .read); None where it is in none (not joined yet, or no memory layer) or the kernel does not say."""
    for line in (read(f"/proc/{pid}/cgroup") or b"").decode(errors="replace").splitlines():
        number, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if not os.path.basename(path).startswith(BOX_PREFIX):
            continue
        version = "v2" if number == "0" and not controllers else "v1" if "cpuacct" in controllers.split(",") else ""
        where = _counting_mounts().get(version)
        if where is None:
            continue
        folder = inside(where[1], where[0], path)
        if version == "v2":
            text = (read(os.path.join(folder, "cpu.stat")) or b"").decode(errors="replace")
            counted = [line.split()[1] for line in text.splitlines() if line.startswith("usage_usec ")]
            return int(counted[0]) / 1e6 if counted else None
        text = (read(os.path.join(folder, "cpuacct.usage")) or b"").decode(errors="replace").strip()
        return int(text) / 1e9 if text.isdigit() else None
    return None
