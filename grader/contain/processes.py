"""Processes of the engine: parent-death signals, reaping, killing, and CPU time of a process tree.

Used by every process of the engine (batch, template, worker, trusted, sandbox); nothing here
trusts what a sandbox says about itself: CPU time is read from /proc by the trusted side, and from the box's
cgroup where it has one (cgroupfs.py): it alone counts processes that ended unseen.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass

from grader.contain import cgroupfs, kernel

_TICKS = os.sysconf("SC_CLK_TCK")


def die_with_parent(parent: int) -> None:
    """In a child just forked from `parent`: get SIGKILL when the parent ends, so a killed batch
    leaves no grading behind. (A change of user id clears the request: call it again after.)"""
    kernel.prctl(kernel.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:   # it ended before the request took effect
        os._exit(1)


def become_subreaper() -> None:
    """Orphans among our descendants become our children (not init's), so none escapes a kill sweep."""
    kernel.prctl(kernel.PR_SET_CHILD_SUBREAPER, 1)


def answer_of_child(work: Callable[[], object]):
    """work() run in a forked child (which may lock itself down for good: it ends right after), its answer sent
    back as JSON; None where the child died without one."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(read_end)
            os.write(write_end, json.dumps(work()).encode())
        except BaseException:  # noqa: BLE001 - the parent reads no answer
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as handle:
        answer = handle.read()
    reap([pid])
    try:
        return json.loads(answer)
    except ValueError:
        return None


def reap(pids: list[int] | None = None, *, block: bool = True) -> dict[int, int]:
    """Wait for children: those in pids (removed from it as they end), or any child (pids None).

    Returns {pid: wait status} of the children reaped. Without block, only those already ended.
    """
    ended: dict[int, int] = {}
    if pids is not None:
        for pid in list(pids):
            try:
                done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 0
            if done:
                pids.remove(pid)
                ended[done] = status
        return ended
    while True:
        try:
            done, status = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return ended
        if done == 0:
            return ended
        ended[done] = status


def kill_group(pgid: int) -> None:
    """SIGKILL a process group (a sandbox calls setsid, so its group is it and the children it did not move)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_user(uid: int) -> None:
    """SIGKILL every process of user uid (root only): a throwaway child becomes uid and kills all it may,
    which is exactly that user's processes, whatever they forked or setsid'ed."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            for _ in range(5):      # again, in case something forked while we killed
                try:
                    os.kill(-1, signal.SIGKILL)
                except ProcessLookupError:
                    break
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


class ProcFiles:
    """Reads /proc files. One that keeps descriptors (keep > 0) reads a file again through the descriptor it opened
    it with: finding the path is most of a read's cost (a sandbox's tree, read after every call, took 0.15-0.25 ms a
    reading, 0.05 ms through kept descriptors), and a kept descriptor stays the file of the process it was opened
    for (a process gone reads as gone, never as a later one that took its pid). At most `keep` are kept: a tree of
    thousands of processes must not use up the reader's descriptors. close() when done."""

    def __init__(self, keep: int = 0):
        self.keep = keep
        self.kept: dict[str, int] = {}

    def read(self, path: str) -> bytes | None:
        """The file's bytes; None where it cannot be read (its process is gone)."""
        return self._through(path, os.O_RDONLY, _read_whole)

    def listdir(self, path: str) -> list[str] | None:
        """The names in the folder; None where it cannot be listed."""
        return self._through(path, os.O_RDONLY | os.O_DIRECTORY, os.listdir)   # listdir(fd) rewinds it after

    def _through(self, path: str, flags: int, reader):
        kept = self.kept.get(path)
        fd = kept
        if fd is None:
            try:
                fd = os.open(path, flags | os.O_CLOEXEC)
            except OSError:
                return None
        try:
            found = reader(fd)
        except OSError:
            found = None
        if kept is None and found is not None and len(self.kept) < self.keep:
            self.kept[path] = fd
        elif kept is None or found is None:
            os.close(self.kept.pop(path, fd))
        return found

    def close(self) -> None:
        """Close the kept descriptors; reads after this open (and close) their files each time."""
        for fd in self.kept.values():
            os.close(fd)
        self.kept.clear()
        self.keep = 0


def _read_whole(fd: int) -> bytes:
    """A /proc file from its start (a short read is its end: /proc generates what a read asks for in one go)."""
    chunks: list[bytes] = []
    while True:
        chunk = os.pread(fd, 1 << 16, sum(map(len, chunks)))
        chunks.append(chunk)
        if len(chunk) < 1 << 16:
            return b"".join(chunks)


_FRESH = ProcFiles()   # keeps nothing: each read opens its file


def children(pid: int, files: ProcFiles = _FRESH) -> list[int]:
    """The live children of pid (every thread's), from /proc; [] when it is gone."""
    found: list[int] = []
    for task in files.listdir(f"/proc/{pid}/task") or ():
        found += [int(child) for child in (files.read(f"/proc/{pid}/task/{task}/children") or b"").split()]
    return found


def descendants(pid: int, files: ProcFiles = _FRESH) -> list[int]:
    """pid and everything below it (children of children), as /proc shows it now."""
    found: list[int] = []
    todo = [pid]
    while todo and len(found) < 4096:
        current = todo.pop()
        found.append(current)
        todo += children(current, files)
    return found


def cpu_seconds(pid: int, files: ProcFiles = _FRESH) -> float:
    """User + system CPU time of a process and of its children it has waited for; 0 when it is gone."""
    # Fields after the command name, counted from 3 (state): utime is 14, stime 15, cutime 16, cstime 17.
    fields = (files.read(f"/proc/{pid}/stat") or b")").rsplit(b")", 1)[1].split()
    try:
        return sum(int(fields[i]) for i in (11, 12, 13, 14)) / _TICKS
    except (IndexError, ValueError):
        return 0.0


def tree_cpu_seconds(pid: int, files: ProcFiles = _FRESH) -> float:
    """CPU time of a process tree: what a sandbox (every process it started) has computed so far."""
    return _counted(pid, descendants(pid, files), files)


def _counted(pid: int, members: list[int], files: ProcFiles) -> float:
    """The tree's CPU time: what its box's cgroup counted (every process that ever ran in it), where pid is in one;
    the members' own times (and their waited-for children's) where that is more (the box's first moments, before
    it joined), or where there is no box group. Without one, the seccomp filter lets the box start no process but
    threads (seccomp.py), so none can end unseen: a process reaped by the kernel reaches no /proc file."""
    own = sum(cpu_seconds(member, files) for member in members)
    counted = cgroupfs.box_cpu_seconds(pid, files.read)
    return own if counted is None else max(own, counted)


@dataclass(frozen=True)
class TreeReading:
    """One look at a box's process tree: its CPU time (tree_cpu_seconds) and the run-queue delays (run_delay_seconds;
    processes the kernel reports none for are left out) of the processes whose waits are the machine's doing
    (engine_processes), as load_free.LoadFreeClock reads them."""
    cpu: float
    waits: dict[int, float]


def read_tree(pid: int, files: ProcFiles = _FRESH) -> TreeReading:
    """Both figures of a box's tree in one walk of /proc: the sandbox gateway reads them after every call (three
    walks a call cost a tenth of a second of every submission's grading), through the descriptors it keeps (files)."""
    members = descendants(pid, files)
    return TreeReading(_counted(pid, members, files), run_delays(engine_processes(pid, members, files), files))


def engine_processes(pid: int, members: list[int], files: ProcFiles = _FRESH) -> list[int]:
    """Of a box's tree (pid and members), the processes the engine started, whose waits for a CPU only the machine's
    load causes: the box's first process, and the init of its PID namespace (pid 1 there: no process of the box
    can make another, the seccomp filter refuses new namespaces). The box runs the calls in them. A process the
    box started itself can be made to wait by the box's own processes (spinners on its CPU, or before the filter
    refused it, its own nice value and affinity): its waits are not the machine's load, and are never forgiven."""
    return [member for member in members if member == pid or _namespace_init(member, files)]


def _namespace_init(pid: int, files: ProcFiles) -> bool:
    """Whether pid is pid 1 of a PID namespace below ours (the last of its NSpid numbers, as the kernel says)."""
    for line in (files.read(f"/proc/{pid}/status") or b"").splitlines():
        if line.startswith(b"NSpid:"):
            numbers = line.split()[1:]
            return len(numbers) > 1 and numbers[-1] == b"1"
    return False


def run_delays(members: list[int], files: ProcFiles = _FRESH) -> dict[int, float]:
    """Each process's run-queue delay (run_delay_seconds), leaving out those the kernel reports none for."""
    found = {}
    for member in members:
        wait = run_delay_seconds(member, files)
        if wait is not None:
            found[member] = wait
    return found


def kill_children_except(keep: set[int]) -> None:
    """SIGKILL and reap every child of this process not in keep, until none is left (a subreaper's sweep:
    each killed process's own children become ours and are killed in the next round)."""
    me = os.getpid()
    for _ in range(100):
        strays = [child for child in children(me) if child not in keep]
        if not strays:
            return
        for child in strays:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        for child in strays:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child, 0)


def run_delay_seconds(pid: int, files: ProcFiles = _FRESH) -> float | None:
    """How long pid has been runnable but waiting for a CPU (the kernel's run-queue delay, the second field of
    /proc/PID/schedstat); None when it is gone or the kernel does not report it."""
    fields = (files.read(f"/proc/{pid}/schedstat") or b"").split()
    try:
        return int(fields[1]) / 1e9
    except (IndexError, ValueError):
        return None


def exit_notice(pid: int) -> list[int]:
    """[a descriptor that select() finds readable once child pid has exited], or [] where the kernel has no
    pidfd_open (Linux before 5.3): then the caller polls."""
    try:
        return [os.pidfd_open(pid)]
    except (AttributeError, OSError):
        return []


def alive(pid: int) -> bool:
    """Whether process pid exists (one of another user's counts: the kernel refuses the signal, not the lookup)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
