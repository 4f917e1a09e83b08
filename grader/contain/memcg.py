"""Memory cgroups: one memory limit for all the processes of a sandbox together (the "memory" layer).

RLIMIT_AS bounds each process alone: a submission that forks three children, each filling most of its own
limit, holds three times the limit. A memory cgroup bounds their sum, whatever the box forks (as isolate and
nsjail do). The run makes a group of its own under the grader's memory cgroup (autograder-<pid>); the worker
makes one group per sandbox in it (the limit set, swap off), and the sandbox joins its group before anything
else (isolation.enter). At the limit the whole box is stopped, never just one of its processes: cgroup v2 kills
every process of the group at once (memory.oom.group); cgroup v1 has no such switch, so its OOM killer is turned
off in a watched group (the box waits at the limit) and the worker, which watches it, kills the box whole. When
the box has ended the worker reads its peak and whether it was stopped, and removes the group.

The grader's cgroup is found from /proc/self/cgroup and /proc/self/mountinfo (v1 memory hierarchy first, as on a
hybrid host, else v2). Every failure is an OSError whose text says why, for the run's isolation line.
"""
from __future__ import annotations

import atexit
import contextlib
import errno
import os
import signal
import time

from grader.contain import cgroupfs, processes

RUN_PREFIX = "autograder-"
_PAGE = os.sysconf("SC_PAGE_SIZE")
_registered: set[int] = set()   # processes whose run group is removed at their exit


@contextlib.contextmanager
def _explained(what: str):
    """Re-raise an OSError as one whose text says what was being done."""
    try:
        yield
    except OSError as error:
        raise OSError(error.errno, f"{what}: {error.strerror or error}") from None


def _read(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def _write(path: str, value) -> None:
    with open(path, "w") as handle:
        handle.write(f"{value}\n")


def _fields(path: str) -> dict[str, int]:
    """A flat keyed file (memory.events, memory.oom_control) as {key: number}; {} when unreadable."""
    try:
        pairs = (line.split() for line in _read(path).splitlines())
        return {pair[0]: int(pair[1]) for pair in pairs if len(pair) == 2 and pair[1].isdigit()}
    except OSError:
        return {}


def is_v2(group: str) -> bool:
    return os.path.exists(os.path.join(group, "cgroup.controllers"))


# ---------------------------------------------------------------- where

def own_group() -> str:
    """The folder of this process's memory cgroup: in the v1 hierarchy that has the memory controller, else in
    the v2 (unified) one, where the controller must be available to it."""
    v1 = _own_v1("memory")
    if v1:
        return v1
    memberships = [line.split(":", 2)[2] for line in _read("/proc/self/cgroup").splitlines()
                   if line.startswith("0::")]
    for root, point, kind, _options in cgroupfs.mounts() if memberships else ():
        if kind == "cgroup2":
            group = cgroupfs.inside(point, root, memberships[0])
            if "memory" not in _read(os.path.join(group, "cgroup.controllers")).split():
                raise OSError(errno.ENOENT, f"cgroup v2: the memory controller is not available in {group}")
            return group
    raise OSError(errno.ENOENT, "no memory cgroup: neither a v1 memory hierarchy nor cgroup v2 is mounted")


def _own_v1(controller: str) -> str:
    """The folder of this process's cgroup in the v1 hierarchy of controller; "" where it is in none."""
    for line in _read("/proc/self/cgroup").splitlines():
        _number, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            for root, point, kind, options in cgroupfs.mounts():
                if kind == "cgroup" and controller in options.split(","):
                    return cgroupfs.inside(point, root, path)
            raise OSError(errno.ENOENT, f"the cgroup v1 {controller} controller is not mounted")
    return ""


def cpu_group(group: str) -> str:
    """The group that counts the CPU time of a box's processes (cgroupfs.box_cpu_seconds): the box's own group in
    v2 (every v2 group counts it); in v1, where the memory hierarchy counts none, the same place in the cpuacct
    hierarchy. Raises OSError where v1 has no cpuacct hierarchy for us."""
    if is_v2(group):
        return group
    accounting = _own_v1("cpuacct")
    if not accounting:
        raise OSError(errno.ENOENT, "cgroup v1 without a cpuacct hierarchy: nothing would count the CPU time of "
                                    "a box's processes together")
    return os.path.join(accounting, os.path.relpath(group, own_group()))


# ---------------------------------------------------------------- the run's group and the boxes' groups

def create_run() -> str:
    """Make this run's group (autograder-<pid>) under our own memory cgroup and return its folder; first remove
    those of runs whose process is gone. It is removed at the end of the run (remove_own_run, also at exit)."""
    with _explained("finding the grader's memory cgroup"):
        parent = own_group()
    remove_stale(parent)
    run = os.path.join(parent, f"{RUN_PREFIX}{os.getpid()}")
    if is_v2(parent):
        _enable_memory(parent)
    with _explained(f"creating {run}"), contextlib.suppress(FileExistsError):
        os.mkdir(run, 0o755)
    if is_v2(run):
        try:   # nothing ever joins the run's group itself: only its boxes' groups, which need the controller
            _enable_memory(run)
        except OSError:
            remove_run(run)
            raise
    if os.getpid() not in _registered:   # a run killed before its end leaves it to the next run (remove_stale)
        atexit.register(_remove_at_exit, os.getpid(), run)
        _registered.add(os.getpid())
    return run


def _enable_memory(group: str) -> None:
    """cgroup v2: the memory controller for group's children ("+memory" in its cgroup.subtree_control). A group
    with processes of its own may not give its children controllers (EBUSY): the layer is then missing."""
    control = os.path.join(group, "cgroup.subtree_control")
    if "memory" in _read(control).split():
        return
    try:
        _write(control, "+memory")
    except OSError as error:
        why = ("it holds processes of its own (start the grader in a cgroup whose memory controller is delegated "
               "to a child group)" if error.errno == errno.EBUSY else error.strerror)
        raise OSError(error.errno, f"cgroup v2: cannot enable the memory controller below {group}: {why}") from None


def create_box(run: str, name: str, limit: int, *, watched: bool = True) -> str:
    """A box's group in the run's group: at most `limit` bytes for all its processes together, no swap, and at
    the limit the whole box stops (v2: killed as one; v1, if watched: it waits for the worker to kill it)."""
    group = os.path.join(run, name)
    with contextlib.suppress(FileNotFoundError):
        remove(group)    # a leftover of the same name (only ever this run's own)
    with _explained(f"creating the memory cgroup {group}"):
        os.mkdir(group, 0o755)
    try:
        with _explained(f"setting the memory limit of {group}"):
            if is_v2(group):
                settings = [("memory.max", limit), ("memory.swap.max", 0), ("memory.oom.group", 1)]
            else:   # limit first: memsw (memory + swap) may never be below it
                settings = [("memory.limit_in_bytes", limit), ("memory.memsw.limit_in_bytes", limit)]
                settings += [("memory.oom_control", 1)] if watched else []
            for file, value in settings:
                if os.path.exists(os.path.join(group, file)):
                    _write(os.path.join(group, file), value)
            if abs(limit_of(group) - limit) >= _PAGE:   # the kernel rounds down to a page, nothing else
                raise OSError(errno.EINVAL, f"the kernel kept {limit_of(group)} bytes, not {limit}")
        if not is_v2(group):
            with _explained("creating the box's CPU-accounting cgroup"):
                os.makedirs(cpu_group(group), 0o755, exist_ok=True)
    except OSError:
        remove(group)
        raise
    return group


def limit_of(group: str) -> int:
    text = _read(os.path.join(group, "memory.max" if is_v2(group) else "memory.limit_in_bytes")).strip()
    return -1 if text == "max" else int(text)


def join(group: str) -> None:
    """Move this process into group: what it allocates from now on, and all it starts, counts against the limit;
    and (v1) into its CPU-accounting twin, which counts their CPU time (cpu_group)."""
    if not group:
        raise OSError(errno.ENOENT, "no memory cgroup was made for this sandbox")
    accounting = cpu_group(group)   # before joining: it is found from where this process is now
    for joined in dict.fromkeys([group, accounting]):
        with _explained(f"joining the cgroup {joined}"):
            _write(os.path.join(joined, "cgroup.procs"), os.getpid())


def member(group: str) -> bool:
    """Whether this process is in group, as the kernel says (/proc/self/cgroup)."""
    tail = "/" + "/".join(group.rstrip("/").split("/")[-2:])
    try:
        lines = _read("/proc/self/cgroup").splitlines()
    except OSError:
        return False
    return any(line.split(":", 2)[-1].endswith(tail) for line in lines)


# ---------------------------------------------------------------- while and after a box runs

def over_limit(group: str) -> bool:
    """Whether the box reached its limit and the kernel could not make room: v1 waiting at the limit (its OOM
    killer is off) or an OOM kill in either version."""
    if is_v2(group):
        events = _fields(os.path.join(group, "memory.events"))
        return events.get("oom_kill", 0) > 0 or events.get("oom_group_kill", 0) > 0
    control = _fields(os.path.join(group, "memory.oom_control"))
    return control.get("under_oom", 0) > 0 or control.get("oom_kill", 0) > 0


def peak(group: str) -> int:
    """The most memory the box's processes held together (0 where the kernel does not say: v2 before 5.19)."""
    try:
        return int(_read(os.path.join(group, "memory.peak" if is_v2(group) else "memory.max_usage_in_bytes")))
    except (OSError, ValueError):
        return 0


def kill(group: str) -> None:
    """SIGKILL every process in group (v2.5.14+: cgroup.kill does it atomically; else until none is left)."""
    kill_file = os.path.join(group, "cgroup.kill")
    if os.path.exists(kill_file):
        with contextlib.suppress(OSError):
            _write(kill_file, 1)
            return
    for _ in range(100):
        try:
            pids = [int(pid) for pid in _read(os.path.join(group, "cgroup.procs")).split()]
        except OSError:
            return
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)


def remove(group: str) -> None:
    """Kill what is left in a box's group and remove it (rmdir: the kernel lets go of an empty group's charges).
    Killed processes take a moment to leave: a few tries. Raises FileNotFoundError if there is no such group."""
    accounting = _twin(group)
    kill(group)
    _rmdir(group)
    if accounting:
        with contextlib.suppress(FileNotFoundError):
            _rmdir(accounting)


def _twin(group: str) -> str:
    """A v1 group's twin in the cpuacct hierarchy (cpu_group); "" in v2, or where there is none."""
    try:
        return "" if is_v2(group) else cpu_group(group)
    except OSError:
        return ""


def _rmdir(group: str) -> None:
    for attempt in range(200):
        try:
            os.rmdir(group)
            return
        except OSError as error:
            if error.errno != errno.EBUSY or attempt == 199:
                raise
            if attempt == 50 and not is_v2(group):
                with contextlib.suppress(OSError):   # v1: charges of an empty group, dropped before removal
                    _write(os.path.join(group, "memory.force_empty"), 0)
            kill(group)
            time.sleep(0.01)


def remove_run(run: str) -> None:
    """Remove the run's group and every box group left in it (those of workers that died), and their twins."""
    accounting = _twin(run)
    for folder in filter(None, (run, accounting)):
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                if entry.is_dir(follow_symlinks=False):
                    with contextlib.suppress(OSError):
                        (remove if folder == run else _rmdir)(entry.path)
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def remove_own_run() -> None:
    """At the end of a run: remove this process's run group, if it made one."""
    with contextlib.suppress(OSError):
        run = os.path.join(own_group(), f"{RUN_PREFIX}{os.getpid()}")
        if os.path.isdir(run):
            remove_run(run)


def _remove_at_exit(pid: int, run: str) -> None:
    if os.getpid() == pid:   # a forked child that exits normally leaves the run's group alone
        remove_run(run)


def remove_stale(parent: str) -> None:
    """Remove the groups of earlier runs whose process is gone (a killed batch): only empty box groups, and the
    run's group once empty; a group that still holds processes is left alone. Their twins too (cpu_group)."""
    twin = _twin(parent)
    parents = [parent, os.path.normpath(twin)] if twin else [parent]
    entries = []
    for folder in dict.fromkeys(parents):
        with contextlib.suppress(OSError):
            entries += [entry for entry in os.scandir(folder)
                        if entry.name.startswith(RUN_PREFIX) and entry.is_dir(follow_symlinks=False)]
    for entry in entries:
        pid = entry.name[len(RUN_PREFIX):]
        if not pid.isdigit() or int(pid) == os.getpid() or processes.alive(int(pid)):
            continue
        with contextlib.suppress(OSError):
            for box in os.scandir(entry.path):
                if box.is_dir(follow_symlinks=False):
                    with contextlib.suppress(OSError):
                        os.rmdir(box.path)
            os.rmdir(entry.path)

