"""What a run as root closes to other users while its sandboxes run, and puts back when it ends.

    closing = Closing.begin(paths)   # each path closed to other users; its mode before is remembered
    ...                              # the sandboxes run: each has a user id of its own
    closing.end()                    # each path no other run uses gets its mode back

With a user id per sandbox, "other users" are the sandboxes: the repository (the hidden tests), the
submissions, the output folder and the grader's private files lose every permission of other users for the
run (hide_from_others). A grader must not find them changed afterwards, so the modes they had are put
back; but two runs on one machine close the same repository, and the first to end must not open it while the
second's sandboxes still run. So one registry on the machine keeps, per path, its mode before the first run
closed it and the process ids of the runs using it: a path goes back when the last run using it ends (or has
died: a killed run's paths go back when the next run ends).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pathlib
import stat
import tempfile

from grader.contain import isolation, processes

# Root's alone: in /run where there is one (no other user can create a file there), else in the temporary folder,
# where a file another user planted is refused (it would decide which modes root puts back).
REGISTRY = pathlib.Path("/run" if os.access("/run", os.W_OK) else tempfile.gettempdir()) / "autograder-closed.json"


class Closing:
    def __init__(self, paths: list[str], registry: pathlib.Path):
        self.paths = paths            # what this run closed (or found closed) and uses
        self.registry = registry
        self.left_closed: list[str] = []   # at the end: still used by another run on this machine

    @classmethod
    def begin(cls, paths, registry: pathlib.Path = REGISTRY) -> Closing:
        used = []
        with _registry(registry) as entries:
            for path in map(str, paths):
                mode = _mode(path)
                if mode is None:
                    continue
                entry = entries.setdefault(os.path.realpath(path), {"mode": mode, "runs": []})
                entry["runs"] = [*_alive(entry["runs"]), os.getpid()]
                hide_from_others(path)
                used.append(path)
        return cls(used, registry)

    def end(self) -> list[str]:
        """Put back the mode of every path no live run uses any more (this run's, and a dead run's); returns the
        paths that could not be put back (gone, or replaced by something else)."""
        lost, mine = [], {os.path.realpath(path): path for path in self.paths}
        with _registry(self.registry) as entries:
            for real, entry in list(entries.items()):
                entry["runs"] = [pid for pid in _alive(entry["runs"]) if pid != os.getpid()]
                if entry["runs"]:
                    if real in mine:
                        self.left_closed.append(mine[real])
                    continue
                del entries[real]
                try:
                    if stat.S_IFMT(os.stat(real, follow_symlinks=False).st_mode) == stat.S_IFMT(entry["mode"]):
                        os.chmod(real, stat.S_IMODE(entry["mode"]))
                        continue
                except OSError:
                    pass
                lost.append(mine.get(real, real))
        return lost


def _mode(path: str) -> int | None:
    try:
        return os.stat(path, follow_symlinks=False).st_mode
    except OSError:
        return None


def _alive(pids: list[int]) -> list[int]:
    return [pid for pid in pids if processes.alive(pid)]


@contextlib.contextmanager
def _registry(path: pathlib.Path):
    """The registry's entries (path -> its mode before, the runs using it), under an exclusive lock of the machine's
    runs, written back on leaving."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid() or info.st_mode & 0o022:
            raise PermissionError(f"{path} belongs to another user or is writable by others: remove it (it says "
                                  f"which permissions a grading run puts back)")
        fcntl.flock(fd, fcntl.LOCK_EX)
        with os.fdopen(os.dup(fd), "r+", encoding="utf-8") as handle:
            try:
                entries = {str(path): {"mode": int(entry["mode"]), "runs": [int(pid) for pid in entry["runs"]]}
                           for path, entry in json.loads(handle.read() or "{}").items()}
            except (ValueError, TypeError, KeyError, AttributeError):
                entries = {}   # unreadable (a crash while writing): nothing to put back from it
            yield entries
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps(entries))
    finally:
        os.close(fd)   # and with it the lock


# ---------------------------------------------------------------- other users' permissions (uid layer, no Landlock)

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
    """Which of paths a fresh unprivileged user could open or list (asked in a throwaway child; root only)."""
    def stranger() -> list[str]:
        isolation.become(isolation.sandbox_uid(os.getpid()))
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
        return found
    return processes.answer_of_child(stranger) or []
