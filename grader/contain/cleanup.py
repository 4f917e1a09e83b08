"""After a box: what it left on the host, removed as the box's own user, so nothing it could not delete itself is
touched, whatever links it planted.

    clean_folder(folder, uid)      its scratch folder, emptied and removed
    clean_shared_folders(uid)      without private mounts: what it left in the shared writable folders
    remove_ipc_of(uid)             without an IPC namespace: the System V objects it owns
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import stat
from dataclasses import dataclass

from grader.contain.kernel import privileged

# The folders every user may write (sticky, as /tmp), where a box without private mounts can leave files.
SHARED_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock")
IPC_RMID = 0   # shmctl, msgctl, semctl: remove the object


def clean_folder(folder: str, uid: int | None) -> None:
    """Empty and remove a box's scratch folder on the host, acting as the box's own user (a forked child that
    becomes uid), so nothing it could not delete itself is touched, whatever links it planted. The empty
    folder itself is then removed by its parent's owner (rmdir: only an empty folder, never followed)."""
    if uid is None or not privileged():
        shutil.rmtree(folder, ignore_errors=True)   # our own user's files: no privilege to abuse
        return
    as_user(uid, lambda: _empty(folder))
    with contextlib.suppress(OSError):   # not empty: left for the grader to look at, never removed by root
        os.rmdir(folder)


def clean_shared_folders(uid: int) -> None:
    """Without private mounts: remove what the box's user left in the shared writable folders, as that user."""
    def sweep():
        for root in SHARED_WRITABLE:
            _remove_entries_of(root, uid)
    as_user(uid, sweep)


@dataclass(frozen=True)
class IpcObject:
    kind: str    # "shm", "msg" or "sem"
    key: int
    ident: int
    uid: int     # its owner


def sysv_ipc_objects() -> list[IpcObject]:
    """Every System V shared-memory segment, message queue and semaphore set the host lists (/proc/sysvipc)."""
    found = []
    for kind in ("shm", "msg", "sem"):
        try:
            with open(f"/proc/sysvipc/{kind}") as handle:
                header, *lines = handle.read().splitlines()
        except (OSError, ValueError):
            continue
        columns = header.split()
        key, ident, owner = columns.index("key"), 1, columns.index("uid")   # the id column is shmid, msqid, semid
        found += [IpcObject(kind, int(fields[key]), int(fields[ident]), int(fields[owner]))
                  for fields in map(str.split, lines) if len(fields) == len(columns)]
    return found


def remove_ipc_of(uid: int) -> None:
    """Without an IPC namespace of its own: remove the System V shared memory, queues and semaphore sets the box's
    user owns (root may remove any). Its POSIX queues cannot exist (RLIMIT_MSGQUEUE 0)."""
    libc = ctypes.CDLL(None, use_errno=True)
    remove = {"shm": lambda ident: libc.shmctl(ident, IPC_RMID, None),
              "msg": lambda ident: libc.msgctl(ident, IPC_RMID, None),
              "sem": lambda ident: libc.semctl(ident, 0, IPC_RMID)}
    for found in sysv_ipc_objects():
        if found.uid == uid:
            remove[found.kind](found.ident)


def as_user(uid: int, action) -> None:
    """Run action in a forked child that has become uid (root only), and wait for it."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            action()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _empty(folder: str) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        _remove(entry.path)


def _remove(path: str) -> None:
    try:
        info = os.lstat(path)
        if stat.S_ISDIR(info.st_mode):
            os.chmod(path, 0o700)
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def _remove_entries_of(folder: str, uid: int) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if info.st_uid == uid:
            _remove(entry.path)
        elif stat.S_ISDIR(info.st_mode) and info.st_mode & 0o002:
            _remove_entries_of(entry.path, uid)
