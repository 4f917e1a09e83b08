"""`python -m student.check` in several submission folders, in one Python (a child of tests/test_public_checks.py):

    python tests/check_runs.py FOLDER [FOLDER ...]

prints one JSON object, folder -> [exit status, what the command printed on stdout and stderr]. Each folder is checked
as a new `python -m student.check` run there would check it: from the folder (the current directory and the first
import path), with no module of an earlier folder's `student` package left imported (its tests included), and
torch's generator at the seed a new process starts with. Only the import of torch and pytest is shared: two seconds
of CPU a folder less than one Python each.
"""
import contextlib
import io
import json
import os
import sys
import traceback

import torch

NEW_PROCESS_SEED = torch.initial_seed()
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [path for path in sys.path if os.path.abspath(path or ".") != HERE]   # as `python -m` has no tests/


def check(folder: str) -> tuple[int, str]:
    for name in [n for n in sys.modules if n == "student" or n.startswith("student.")]:
        del sys.modules[name]
    os.chdir(folder)
    sys.path.insert(0, folder)
    torch.manual_seed(NEW_PROCESS_SEED)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        try:
            from student import check as command
            code = command.main([])
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
        except BaseException:  # noqa: BLE001 - what the command would print before its exit status 1
            traceback.print_exc()
            code = 1
    sys.path.remove(folder)
    return code, printed.getvalue()


if __name__ == "__main__":
    print(json.dumps({folder: check(folder) for folder in sys.argv[1:]}))
