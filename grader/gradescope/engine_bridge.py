"""The single door from Otter to our grading: grade one submission, get Gradescope's results.json.

Everything Otter-related calls grade_submission(); only this file knows how the engine is started.
It runs the runtime's batch command, `python -m grader SUBMISSION --out SCRATCH` (results
and grades.csv only: no class report for one submission), as a child process
from `source_root` (the folder holding the `grader` and `grading_tests` packages: the repository,
or /autograder/source on Gradescope), so the grader that runs is exactly the one shipped in
autograder.zip and the score is the batch command's by construction.
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Set as AbstractSet

from grader.row import of_results

# Wall-clock limit for grading one submission: above the engine's own budget (240 s + 60 s grace).
GRADE_TIMEOUT_S = 1200
PACKED_NAME = "submission.zip"


class GradingFailed(RuntimeError):
    """The engine itself failed (not the student's code): the instructor must look."""


def pack_folder(folder: pathlib.Path, zip_path: pathlib.Path, skip: AbstractSet[str] = frozenset()) -> pathlib.Path:
    """Zip a submission folder as the student uploaded it, so the engine unpacks it exactly as it
    unpacks any zip. Links are stored as links (never followed), so the engine rejects them as it
    would in a folder; `skip` names top-level entries that are not the student's (Otter's own)."""
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
        for root, dirs, files in os.walk(folder):
            relative = pathlib.Path(root).relative_to(folder)
            if relative == pathlib.Path("."):
                dirs[:] = [d for d in dirs if d not in skip]
                files = [f for f in files if f not in skip]
            for name in sorted(dirs + files):
                path = pathlib.Path(root) / name
                arcname = (relative / name).as_posix()
                if path.is_symlink():
                    link = zipfile.ZipInfo(arcname)
                    link.external_attr = (stat.S_IFLNK | 0o777) << 16
                    zf.writestr(link, os.readlink(path))
                elif path.is_file():
                    zf.write(path, arcname)
    return zip_path


def run_engine(paths, out: pathlib.Path, source_root, *, workers: int = 1, timeout: float = GRADE_TIMEOUT_S,
               env: dict | None = None, check: bool = True, private=(), options=()) -> subprocess.CompletedProcess:
    """Run the runtime's batch command `python -m grader PATHS --out OUT` with the engine found in
    source_root (only that folder is importable: never the submission, never this checkout by accident).
    env: extra environment variables; private: the grader's files no sandbox may read (--private); options:
    more of the command's options (--no-exports).
    Raises GradingFailed when it runs past timeout, or (check) exits non-zero."""
    source_root = pathlib.Path(source_root).resolve()
    if not (source_root / "grader" / "__main__.py").is_file():
        raise GradingFailed(f"{source_root} holds no grading engine (grader/__main__.py)")
    command = [sys.executable, "-m", "grader", *map(str, paths), "--out", str(out),
               "--workers", str(workers), *(f"--private={path}" for path in private), *options]
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(source_root), "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        # cwd: an empty folder of ours, since `python -m` puts the working folder on the path.
        with tempfile.TemporaryDirectory(prefix="engine-cwd-") as cwd:
            proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise GradingFailed(f"the grading engine ran past {timeout:g} s") from error
    if check and proc.returncode != 0:
        raise GradingFailed(failure_message(proc))
    return proc


def failure_message(proc: subprocess.CompletedProcess) -> str:
    log = (proc.stdout + proc.stderr)[-3000:]
    return f"the grading engine failed (exit {proc.returncode}):\n{log}"


def results_from_out(out: pathlib.Path) -> dict:
    """The one results/*.json the engine wrote. A row the engine failed on (engine_failure) is not the
    student's result: GradingFailed, so the student is told it is not their fault."""
    found = sorted((out / "results").glob("*.json"))
    if len(found) != 1:
        raise GradingFailed(f"expected one result in {out / 'results'}, found {len(found)}")
    document = json.loads(found[0].read_text())
    row = of_results(document)
    if row is not None and row.engine_failure:
        raise GradingFailed(f"the grading engine failed on this submission: {row.message or 'no details'}")
    return document


def grade_submission(submission, source_root, *, timeout: float = GRADE_TIMEOUT_S,
                     skip: AbstractSet[str] = frozenset(), private=(), public_checks: bool = False) -> dict:
    """Grade a submission (a folder, or a .zip) with the batch command; returns the results.json dict.

    source_root: folder whose `grader` and `grading_tests` packages do the grading.
    skip: top-level names of a submission folder that are not the student's (see pack_folder).
    public_checks: run the handout's public checks too (the batch command's --public-checks).
    Raises GradingFailed when the engine crashes or writes no results.
    """
    submission = pathlib.Path(submission).resolve()
    with tempfile.TemporaryDirectory(prefix="otter-engine-") as scratch_name:
        scratch = pathlib.Path(scratch_name)
        # A private copy: the engine grades what was submitted, whatever happens to the original after.
        packed = scratch / PACKED_NAME
        if submission.is_dir():
            pack_folder(submission, packed, skip)
        else:
            shutil.copyfile(submission, packed)
        # One upload is one submission: never an export, whatever metadata file the student put in it.
        options = ("--no-exports", *(["--public-checks"] if public_checks else []))
        proc = run_engine([packed], scratch / "out", source_root, timeout=timeout, check=False, private=private,
                          options=options)
        # A submission the engine could not grade may end the batch command with a non-zero exit (every
        # row an error), yet its result says why: only a run that left no result is the engine's failure.
        if not list((scratch / "out" / "results").glob("*.json")):
            raise GradingFailed(failure_message(proc))
        return results_from_out(scratch / "out")
