"""Spoiler (issue 20, class 1): text that is not UTF-8, to stop the whole class's gradebook.

At import this tries to open a path holding a byte that is not UTF-8 (the tripwires note the attempt,
with the name decoded as Python decodes file names: a lone surrogate) and fails an import of a
module of that name; the package itself is the reference. No UTF-8 writer accepts a lone surrogate:
had any of it reached grades.csv or a results file as it is, the batch would stop there.
"""
import contextlib
import os


def run():
    name = os.fsdecode(b"/etc/not-utf8-\xff\xfe")
    with contextlib.suppress(OSError):
        open(name).close()
    with contextlib.suppress(ImportError):
        __import__(os.fsdecode(b"module_\xff"))
    print(name)
