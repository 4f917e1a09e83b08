"""Escape (issue 20, class 2): read the grader's environment and command line from inside the box.

A sandbox forked from the batch keeps the batch's environment and argv on its stack, where
/proc/self/environ and /proc/self/cmdline show them although os.environ was cleared. At import this
looks for the zoo's secret (set in the grading run's environment) and for the batch's own command line
there, and in os.environ and sys.argv; found, it fails the import with what it found (which would
reach the gradebook and the feedback). The template is a fresh program with an environment of its own:
nothing is found and the package imports as the reference.
"""
import os
import sys

SECRET = "@SECRET@"
GRADER_WORDS = ("--out", "--workers")   # of the batch command: python -m autograder grade PATHS --out OUT ...


def _read(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def run():
    places = {"/proc/self/environ": _read("/proc/self/environ"), "/proc/self/cmdline": _read("/proc/self/cmdline"),
              "os.environ": " ".join(f"{k}={v}" for k, v in os.environ.items()),
              "sys.argv": " ".join(sys.argv + list(getattr(sys, "orig_argv", [])))}
    found = [f"{where}: {text[:300]}" for where, text in places.items()
             if SECRET in text or any(word in text for word in GRADER_WORDS)]
    if found:
        raise RuntimeError("the grader's environment: " + " | ".join(found))
