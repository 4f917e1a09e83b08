"""Cheat (issue 11, class 6): print the hidden tests from any other copy of the repository it can read.

Searches the usual places for a grading_tests/ folder (a clone in /tmp, other checkouts) and prints
what it finds into its own feedback. Landlock lets the sandbox read only the Python installation and
its own submission, so however world-readable a copy is, nothing is found.
"""
import glob

PATTERNS = ("/tmp/*/grading_tests/oracle.py", "/tmp/*/*/grading_tests/oracle.py", "/work/*/grading_tests/oracle.py",
            "/work/*/*/grading_tests/oracle.py", "/home/*/*/grading_tests/oracle.py",
            "/autograder/source/grading_tests/oracle.py",
            "@REPO@/grading_tests/oracle.py")


def run():
    for pattern in PATTERNS:
        for path in glob.glob(pattern):
            try:
                with open(path) as handle:
                    print(f"HIDDEN TESTS FROM {path}:\n{handle.read()[:400]}")
            except OSError as error:
                print(f"cannot read {path}: {type(error).__name__}")
    print("searched for copies of the hidden tests")
