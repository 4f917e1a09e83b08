"""The single door from Otter to our grading: grade one submission folder, get Gradescope results.

Everything Otter-related calls grade_submission(); only this file knows how the engine is started.
It runs the engine as a child process from `source_root` (the folder holding the `autograder` and
`grading_tests` packages: the repository, or /autograder/source inside Gradescope), so the grader
that runs is exactly the one shipped in autograder.zip, and it is literally the batch command:
the same code path gives the same score.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile

# Wall-clock limit for grading one submission, above the engine's own per-call limits.
GRADE_TIMEOUT_S = 1200


class GradingFailed(RuntimeError):
    """The engine itself failed (not the student's code): the instructor must look."""


def grade_command(submission_dir: pathlib.Path, results_json: pathlib.Path, source_root: pathlib.Path) -> list[str]:
    """The batch command that grades one submission folder into a Gradescope results.json."""
    if (source_root / "autograder" / "grade_cli.py").is_file():
        return [sys.executable, "-m", "autograder", "grade", str(submission_dir), "--results-json", str(results_json)]
    # TEMPORARY until the engine lands: the hidden suite in a child process, in-process gateway (no sandbox).
    return [sys.executable, "-m", "pytest", str(source_root / "grading_tests"), "-q", "-p", "no:cacheprovider",
            "--rootdir", str(source_root), "--submission", str(submission_dir), "--results-json", str(results_json)]


def grade_submission(submission_dir, source_root, *, timeout: float = GRADE_TIMEOUT_S) -> dict:
    """Grade the student/ package inside submission_dir; returns the results.json dict.

    source_root: folder whose `autograder` and `grading_tests` packages do the grading.
    Raises GradingFailed when the engine crashes or writes no results.
    """
    submission_dir = pathlib.Path(submission_dir).resolve()
    source_root = pathlib.Path(source_root).resolve()
    with tempfile.TemporaryDirectory(prefix="otter-engine-") as scratch:
        results_json = pathlib.Path(scratch) / "results.json"
        # Only the trusted source is importable: the submission is never on the engine's own path.
        env = {**os.environ, "PYTHONPATH": str(source_root), "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            proc = subprocess.run(grade_command(submission_dir, results_json, source_root), cwd=scratch, env=env,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as error:
            raise GradingFailed(f"the grading engine ran past {timeout:g} s") from error
        if not results_json.is_file():
            raise GradingFailed(f"the grading engine wrote no results (exit {proc.returncode}):\n"
                                f"{(proc.stdout + proc.stderr)[-3000:]}")
        return json.loads(results_json.read_text())
