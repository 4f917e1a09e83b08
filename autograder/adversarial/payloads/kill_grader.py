"""Cheat: stop the grader: kill and freeze the parent, its process group and every sibling, at import and on each call.

As its own unprivileged user the sandbox may signal none of them (EPERM), so grading goes on
and the stubs score 0. (Only written into the zoo when the engine runs as root: without
isolation this would really kill the grader.)
"""
import os
import signal

from ._common import FUNCTIONS, stub


def _siblings(parent):
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if int(handle.read().rsplit(")", 1)[1].split()[1]) == parent:
                    yield int(pid)
        except (OSError, ValueError, IndexError):
            continue


def _strike():
    parent, me = os.getppid(), os.getpid()
    refused = 0
    for pid in {parent, *_siblings(parent)} - {me}:
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except OSError:
                refused += 1
    try:
        os.killpg(os.getpgid(parent), signal.SIGKILL)
    except OSError:
        refused += 1
    print(f"signals refused: {refused}")


def _striking(stub):
    def call(*args, **kwargs):
        _strike()
        return stub(*args, **kwargs)
    return call


def install(api):
    _strike()
    for name in FUNCTIONS:
        api[name] = _striking(stub(api, name))
