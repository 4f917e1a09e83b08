"""A copy of the repository to change as an instructor would, and the commands run in it (the instructor tests)."""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

from grader.paths import REPO
from tests.patience import SAFETY_NET_S


def repository_copy(dest: pathlib.Path) -> pathlib.Path:
    """The repository's working tree (tracked and untracked files git does not ignore), copied to dest."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def python(copy: pathlib.Path, *args: str, timeout: float = SAFETY_NET_S) -> subprocess.CompletedProcess:
    """`python ARGS` in the copy (its own packages, not this checkout's)."""
    return subprocess.run([sys.executable, *args], cwd=copy, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def command(copy: pathlib.Path, *args: str, timeout: float = SAFETY_NET_S) -> subprocess.CompletedProcess:
    """`python -m autograder ARGS` in the copy."""
    return python(copy, "-m", "autograder", *args, timeout=timeout)


def edit(copy: pathlib.Path, name: str, old: str, new: str) -> None:
    path = copy / name
    text = path.read_text()
    assert text.count(old) == 1, f"{name}: {old!r} is not there exactly once"
    path.write_text(text.replace(old, new))


def append(copy: pathlib.Path, name: str, text: str) -> None:
    with open(copy / name, "a") as handle:
        handle.write(text)


def part_table(copy: pathlib.Path, number: int) -> str:
    """The [[parts]] table of Part `number` in the copy's spec, as written."""
    text = (copy / "assignment/assignment.toml").read_text()
    start = text.index(f"[[parts]]\nnumber = {number}\n")
    end = text.find("\n[", start + 1)
    return text[start:end]


def selfcheck(copy: pathlib.Path) -> subprocess.CompletedProcess:
    return command(copy, "selfcheck", "--quick", "--out", str(copy / "out" / "selfcheck"))


def results_of(copy: pathlib.Path, name: str) -> dict:
    return json.loads((copy / "out" / "selfcheck" / "grades" / "results" / f"{name}.json").read_text())
