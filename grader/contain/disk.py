"""A box's use of the disk where no private tmpfs bounds it (no mnt layer: Gradescope's container, an ordinary
user), measured from outside by the worker, which stops the box at the limit a tmpfs would have set.

    used = disk.held(box.scratch, uid, limit)   # bytes, counted until past limit

What counts: the blocks of every file and folder under the box's scratch folder, and, where the box has a user of
its own, of what that user owns in the shared writable folders (/tmp, /var/tmp, /dev/shm), plus a block for
every entry (a flood of empty files fills a disk's inodes). The walk never follows a link: each folder is
opened relative to its parent with O_NOFOLLOW, so a folder swapped for a link mid-walk is not entered. It stops
as soon as the limit is passed, so a box that made millions of files costs at most one limit's worth of entries.
"""
from __future__ import annotations

import contextlib
import os
import stat

from grader.contain.cleanup import SHARED_WRITABLE

ENTRY_BYTES = 4096   # what an entry costs the disk at least (an inode, a block of its folder)


def held(scratch: str, uid: int | None, limit: int) -> int:
    """The bytes the box holds on disk, counted until past limit (then a number above it)."""
    total = _walk(scratch, limit)
    if uid is not None:
        for root in SHARED_WRITABLE:
            if total > limit:
                break
            total += _walk(root, limit - total, owner=uid)
    return total


def _walk(path: str, limit: int, *, owner: int | None = None) -> int:
    """Bytes under the folder at path (owner: only its top-level entries that this user owns)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return 0
    return _folder(fd, owner, limit)


def _folder(fd: int, owner: int | None, limit: int) -> int:
    """Bytes of the entries of the open folder fd (closed here); owner: count only the entries this user owns."""
    total = 0
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if owner is not None and info.st_uid != owner:
                    continue
                total += info.st_blocks * 512 + ENTRY_BYTES
                if stat.S_ISDIR(info.st_mode) and total <= limit:
                    with contextlib.suppress(OSError):
                        child = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                        total += _folder(child, None, limit - total)
                if total > limit:
                    break
    finally:
        os.close(fd)
    return total
