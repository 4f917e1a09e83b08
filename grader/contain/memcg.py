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

from grader.contain import processes

RUN_PREFIX = "autograder-"
BOX_PREFIX = "box-"
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
    memberships = {}
    for line in _read("/proc/self/cgroup").splitlines():
        number, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            memberships["v1"] = path
        elif number == "0" and not controllers:
            memberships["v2"] = path
    mounts = _mounts()
    if "v1" in memberships:
        for root, point, kind, options in mounts:
            if kind == "cgroup" and "memory" in options.split(","):
                return _inside(point, root, memberships["v1"])
        raise OSError(errno.ENOENT, "the cgroup v1 memory controller is not mounted")
    if "v2" in memberships:
        for root, point, kind, _options in mounts:
            if kind == "cgroup2":
                group = _inside(point, root, memberships["v2"])
                if "memory" not in _read(os.path.join(group, "cgroup.controllers")).split():
                    raise OSError(errno.ENOENT, f"cgroup v2: the memory controller is not available in {group}")
                return group
    raise OSError(errno.ENOENT, "no memory cgroup: neither a v1 memory hierarchy nor cgroup v2 is mounted")


def _mounts() -> list[tuple[str, str, str, str]]:
    """(root, mount point, filesystem type, super options) of every mount, from /proc/self/mountinfo."""
    found = []
    for line in _read("/proc/self/mountinfo").splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        tail = fields[fields.index("-") + 1:]
        found.append((_unescape(fields[3]), _unescape(fields[4]), tail[0], tail[2] if len(tail) > 2 else ""))
    return found


def _unescape(text: str) -> str:
    """mountinfo writes a space, tab, newline and backslash in a path as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        text = text.replace(code, char)
    return text


def _inside(point: str, root: str, path: str) -> str:
    """The folder of cgroup `path` under a mount of the hierarchy's `root` at `point`."""
    if root != "/" and (path == root or path.startswith(root + "/")):
        path = path[len(root):]
    return os.path.normpath(os.path.join(point, path.lstrip("/")))


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
    except OSError:
        remove(group)
        raise
    return group


def limit_of(group: str) -> int:
    text = _read(os.path.join(group, "memory.max" if is_v2(group) else "memory.limit_in_bytes")).strip()
    return -1 if text == "max" else int(text)


def join(group: str) -> None:
    """Move this process into group: what it allocates from now on, and all it starts, counts against the limit."""
    if not group:
        raise OSError(errno.ENOENT, "no memory cgroup was made for this sandbox")
    with _explained(f"joining the memory cgroup {group}"):
        _write(os.path.join(group, "cgroup.procs"), os.getpid())


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
    kill(group)
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
    """Remove the run's group and every box group left in it (those of workers that died)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(run):
            if entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    remove(entry.path)
    with contextlib.suppress(OSError):
        os.rmdir(run)


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
    run's group once empty; a group that still holds processes is left alone."""
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(RUN_PREFIX) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return
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

