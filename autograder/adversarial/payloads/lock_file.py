"""Abuse (issue 31, class 2): locks on a file the box may only read, a channel between two boxes over the same
files (a byte-range lock, a whole-file lock and a lease need no right to write). The seccomp layer refuses every
lock; with it switched off the locks are taken, and the output says so.
"""
import fcntl
import os

GOT = "GOT A LOCK"


def run():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "__init__.py"), "rb") as handle:
        for name, take in (("flock", lambda: fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)),
                           ("a byte-range lock", lambda: fcntl.lockf(handle, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 0))):
            try:
                take()
                print(f"{GOT}: {name}")
            except OSError as error:
                print(f"no {name}: {type(error).__name__}")
