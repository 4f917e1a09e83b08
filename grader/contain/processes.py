"""Processes of the engine: parent-death signals, reaping, killing, and CPU time of a process tree.

Used by every process of the engine (batch, template, worker, trusted, sandbox); nothing here
trusts what a sandbox says about itself: CPU time is read from /proc by the trusted side.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass

from grader.contain import kernel

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


def children(pid: int) -> list[int]:
    """The live children of pid (every thread's), from /proc; [] when it is gone."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(child) for child in handle.read().split()]
        except OSError:
            continue
    return found


def descendants(pid: int) -> list[int]:
    """pid and everything below it (children of children), as /proc shows it now."""
    found: list[int] = []
    todo = [pid]
    while todo and len(found) < 4096:
        current = todo.pop()
        found.append(current)
        todo += children(current)
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and of its children it has waited for; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    # Fields after the command name, counted from 3 (state): utime is 14, stime 15, cutime 16, cstime 17.
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / _TICKS


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of a process tree: what a sandbox (every process it started) has computed so far.
    In a PID namespace orphans are re-parented to its init, so the tree is the whole box."""
    return sum(cpu_seconds(member) for member in descendants(pid))


@dataclass(frozen=True)
class TreeReading:
    """One look at a process tree: its CPU time (tree_cpu_seconds) and each member's run-queue delay
    (run_delay_seconds; members the kernel reports none for are left out), as load_free.LoadFreeClock reads it."""
    cpu: float
    waits: dict[int, float]


def read_tree(pid: int) -> TreeReading:
    """Both figures of a tree in one walk of /proc: the sandbox gateway reads them after every call (three walks
    a call cost a tenth of a second of every submission's grading)."""
    members = descendants(pid)
    return TreeReading(sum(cpu_seconds(member) for member in members), run_delays(members))


def run_delays(members: list[int]) -> dict[int, float]:
    """Each process's run-queue delay (run_delay_seconds), leaving out those the kernel reports none for."""
    found = {}
    for member in members:
        wait = run_delay_seconds(member)
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


def run_delay_seconds(pid: int) -> float | None:
    """How long pid has been runnable but waiting for a CPU (the kernel's run-queue delay, the second field of
    /proc/PID/schedstat); None when it is gone or the kernel does not report it."""
    try:
        with open(f"/proc/{pid}/schedstat") as handle:
            return int(handle.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
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
