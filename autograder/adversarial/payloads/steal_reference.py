"""Cheat: copy a finished solution from disk: the reference, the git history, or another student's submission.

The first complete solution found is imported and used. Under the engine the repository and
the other submissions are closed to the sandbox's user, so the stubs stay (score 0). What it
could read is printed, so the feedback shows the evidence.
"""
import glob
import importlib
import os
import subprocess
import sys
import tempfile

from ._common import FUNCTIONS

REPO = "@REPO@"
ZOO = "@ZOO@"
MODULES = ("scaling.py", "masking.py", "heads.py", "padding.py", "multihead.py")
HIDDEN = ("grading_tests/oracle.py", "grading_tests/test_part3_heads.py", "grading_tests/checks.py")


def _read(folder):
    try:
        return {name: open(os.path.join(folder, name)).read() for name in MODULES}
    except OSError:
        return None


def _git(repo):
    files = {}
    for name in MODULES:
        try:
            command = ["git", "-c", "safe.directory=*", "-C", repo, "show", f"HEAD:assignment/reference/{name}"]
            proc = subprocess.run(command,
                                  capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return None
        if proc.returncode != 0:
            return None
        files[name] = proc.stdout
    return files


def _candidates():
    roots = [REPO, "/autograder/source", f"/proc/{os.getppid()}/cwd", f"/proc/{os.getppid()}/root{REPO}"]
    for root in roots:
        yield f"reference in {root}", _read(os.path.join(root, "assignment", "reference"))
        yield f"git history of {root}", _git(root)
    for pattern in (f"{ZOO}/*/student", f"{ZOO}/*/*/student", "/tmp/autograder-sandboxes-*/*/student"):
        for folder in glob.glob(pattern):
            yield f"submission {folder}", _read(folder)


def _load(files):
    folder = tempfile.mkdtemp()
    name = f"stolen_{os.getpid()}"
    os.mkdir(os.path.join(folder, name))
    for module, text in files.items():
        with open(os.path.join(folder, name, module), "w") as handle:
            handle.write(text)
    with open(os.path.join(folder, name, "__init__.py"), "w") as handle:
        handle.write("".join(f"from .{m[:-3]} import *\n" for m in MODULES))
    sys.path.insert(0, folder)
    return importlib.import_module(name)


def install(api):
    for relative in HIDDEN:
        try:
            with open(os.path.join(REPO, relative)) as handle:
                print(f"read the hidden {relative}: {len(handle.read())} characters")
        except OSError as error:
            print(f"cannot read the hidden {relative}: {type(error).__name__}")
    for label, files in _candidates():
        if files and not any("NotImplementedError" in text for text in files.values()):
            solution = _load(files)
            api.update({name: getattr(solution, name) for name in (*FUNCTIONS, "MultiHeadAttention")})
            print(f"stole a complete solution: {label}")
            return
    print("found no solution to steal")
