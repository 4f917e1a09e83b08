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

from autograder.engine.isolation import SHARED_WRITABLE

ENTRY_BYTES = 4096   # what an entry costs the disk at least (an inode, a block of its folder)


def held(scratch: str, uid: int | None, limit: int) -> int:
    """The bytes the box holds on disk, counted until past limit (then a number above it)."""
    total = _walk(scratch, lambda _entry: True, limit)
    if uid is not None:
        for root in SHARED_WRITABLE:
            if total > limit:
                break
            total += _walk(root, lambda entry, uid=uid: entry.st_uid == uid, limit - total, top_only_filter=True)
    return total


def _walk(path: str, counts, limit: int, *, top_only_filter: bool = False) -> int:
    """Bytes under the folder at path (its top-level entries filtered by counts when top_only_filter)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return 0
    return _folder(fd, counts if top_only_filter else None, limit)


def _folder(fd: int, counts, limit: int) -> int:
    """Bytes of the entries of the open folder fd (closed here); counts: which top entries are the box's."""
    total = 0
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if counts is not None and not counts(info):
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
