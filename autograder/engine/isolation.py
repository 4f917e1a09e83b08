"""Operating-system isolation of a sandbox: its own user, resource limits, and killing all of it.

As root, every submission gets a fresh numeric user id (UID_BASE + the grading
process's pid, unique among running processes; no passwd entry is needed). A
process of that user cannot signal the grader (another user), cannot read files
whose "other" permission bits are off, and can be wiped out completely by a
`kill(-1, SIGKILL)` issued as that same user, whatever it forked or setsid'ed.
Not root: none of this is possible; the run says "not isolated".
"""
from __future__ import annotations

import os
import resource
import shutil
import signal
import stat
from dataclasses import dataclass

UID_BASE = 1_000_000
SHARED_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")   # where a sandbox user can leave files behind


@dataclass(frozen=True)
class Limits:
    call_timeout: float = 10.0          # seconds per call into student code (and per import)
    budget: float = 240.0               # seconds of student code per submission
    memory_bytes: int = 4 << 30         # RLIMIT_AS of the sandbox
    max_processes: int = 32             # RLIMIT_NPROC of the sandbox's user (threads count)
    max_file_bytes: int = 16 << 20      # RLIMIT_FSIZE: no file written larger than this
    max_open_files: int = 256
    output_bytes: int = 64 << 10        # stdout/stderr kept per submission
    timeout_strikes: int = 2            # timeouts of one function before it is no longer called
    refusal_strikes: int = 3            # refused (malformed or forged) answers of one function, likewise


def die_with_parent(parent: int) -> None:
    """In a child just forked from `parent`: get SIGKILL when the parent ends, so a killed batch
    leaves no grading behind."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:   # it ended before the request took effect
        os._exit(1)


def privileged() -> bool:
    return os.geteuid() == 0


def sandbox_uid(grader_pid: int) -> int:
    return UID_BASE + grader_pid


def apply_limits(limits: Limits) -> None:
    """rlimits for the current process (the sandbox, just before it imports student code)."""
    pairs = [
        (resource.RLIMIT_NPROC, limits.max_processes),
        (resource.RLIMIT_FSIZE, limits.max_file_bytes),
        (resource.RLIMIT_NOFILE, limits.max_open_files),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_CPU, int(limits.budget) + 5),
    ]
    # CUDA reserves terabytes of address space: there RLIMIT_AS would break every GPU call,
    # so the data segment (what the process really allocates) is limited instead.
    memory_limit = resource.RLIMIT_DATA if os.path.exists("/dev/nvidia0") else resource.RLIMIT_AS
    pairs.append((memory_limit, limits.memory_bytes))
    for which, value in pairs:
        soft, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # an over-long write fails instead of killing


def drop_privileges(uid: int) -> None:
    """Become uid/gid `uid` for good (real, effective and saved ids), with no extra groups."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise OSError("could not drop privileges")


def kill_user(uid: int) -> None:
    """SIGKILL every process of user uid (root only): a helper becomes uid and kills all it can."""
    if not privileged():
        return
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


def remove_files_of(uid: int, roots=SHARED_WRITABLE) -> None:
    """Delete what user uid left in the shared writable folders (root only).

    It could fill the disk, and a later submission whose sandbox reuses the uid (pids are
    reused) must not find it. Only folders others may write to are searched: nowhere else can
    that user have created anything.
    """
    if not privileged():
        return
    for root in roots:
        _remove_owned(root, uid)


def _remove_owned(folder: str, uid: int) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
            if info.st_uid == uid:
                if stat.S_ISDIR(info.st_mode):
                    shutil.rmtree(entry.path, ignore_errors=True)   # never follows links
                else:
                    os.unlink(entry.path)
            elif stat.S_ISDIR(info.st_mode) and info.st_mode & 0o002:
                _remove_owned(entry.path, uid)
        except OSError:
            continue


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by pid (the sandbox calls setsid, so that is it and its children)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def hide_from_others(path) -> None:
    """Remove every permission of "other users" on path (so a sandbox user cannot read or enter it).

    A shared scratch folder (sticky and world-writable, as /tmp) and / are left alone: closing
    them would break every other user; what matters inside them is closed one by one.
    """
    try:
        mode = os.stat(path, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    shared = stat.S_ISDIR(mode) and mode & stat.S_ISVTX and mode & 0o002
    if not stat.S_ISLNK(mode) and not shared and os.path.realpath(path) != "/":
        os.chmod(path, stat.S_IMODE(mode) & ~0o007)


def readable_by_stranger(paths) -> list[str]:
    """Which of paths a fresh unprivileged user could open or list (asked in a throwaway child)."""
    if not privileged():
        return [str(p) for p in paths]
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            drop_privileges(sandbox_uid(os.getpid()))
            found = []
            for path in paths:
                try:
                    if os.path.isdir(path):
                        os.listdir(path)
                    else:
                        with open(path, "rb") as handle:
                            handle.read(1)
                    found.append(str(path))
                except OSError:
                    pass
            os.write(write_end, "\n".join(found).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as handle:
        answer = handle.read().decode()
    os.waitpid(pid, 0)
    return [line for line in answer.split("\n") if line]
