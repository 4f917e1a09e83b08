"""Gradescope's autograder harness rebuilt in a temporary folder: no Docker, no network.

    python -m autograder.otter.harness dist/autograder.zip SUBMISSION.zip [--keep DIR]
                                       [--at TIME] [--due TIME] [--previous TIME=SCORE ...]
    run(autograder_zip, submission, workdir) -> Run(returncode, results, stdout, seconds, root)
    play(autograder_zip, [(upload, created_at), ...], workdir, previous=...) -> [Run, ...]: a submission history,
        each upload graded with the earlier ones as its previous_submissions (the budget and late policy act)

What Gradescope does (its "Autograder Specifications"), with ROOT standing for /autograder:
autograder.zip unpacked into ROOT/source; ROOT/source/run_autograder copied to ROOT/run_autograder
(executable); the student's upload unpacked into ROOT/submission (a .zip is extracted, any other file
copied); ROOT/submission_metadata.json; then ROOT/run_autograder run with ROOT as the working folder, its
output captured into ROOT/results/stdout, and ROOT/results/results.json read back.
Two differences, both outside what is graded: ROOT is a temporary folder (run_autograder finds the layout
from its own location, so no path is rewritten), and setup.sh is not run: the current interpreter, which
has the requirements installed, stands in for the image's (run_autograder's AUTOGRADER_PYTHON).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass

from autograder.otter import image

# Gradescope's own limit on one run (10 minutes by default).
GRADESCOPE_TIMEOUT_S = 600


@dataclass(frozen=True)
class Run:
    returncode: int
    results: dict | None      # ROOT/results/results.json, None when run_autograder wrote none
    stdout: str               # what Gradescope shows instructors as the autograder output
    seconds: float            # wall time of run_autograder, process start included
    root: pathlib.Path


CREATED_AT = "2026-01-15T14:22:32.365935-08:00"
DUE_DATE = "2026-01-31T23:00:00.000000-08:00"


def submission_metadata(submission_id: int = 1, *, created_at: str = CREATED_AT, due_date: str = DUE_DATE,
                        late_due_date: str | None = None, previous: list[dict] | None = None) -> dict:
    """A submission_metadata.json shaped like Gradescope's (its "Submission Metadata" page). previous: its
    previous_submissions (previous_submission() makes one)."""
    return {
        "id": submission_id,
        "created_at": created_at,
        "assignment": {"id": 25828, "course_id": 1234, "title": "Attention in PyTorch", "total_points": "100.0",
                       "due_date": due_date, "late_due_date": late_due_date,
                       "release_date": "2026-01-02T00:00:00.000000-08:00", "group_submission": False,
                       "group_size": None, "submission_method": "upload"},
        "users": [{"email": "student@example.edu", "id": 4321, "name": "Student User"}],
        "previous_submissions": list(previous or []),
    }


def previous_submission(submission_time: str, score: float, results: dict | None = None) -> dict:
    """One entry of previous_submissions, as Gradescope writes it: when, the score it recorded, its results.json."""
    return {"submission_time": submission_time, "score": score, "results": results or {"score": score}}


def play(autograder_zip, uploads, workdir, *, previous: list[dict] | None = None, **dates) -> list[Run]:
    """A student's submission history, played as Gradescope would: uploads is a list of (upload, created_at),
    graded in turn in workdir/1, workdir/2, ..., each with the earlier ones (after `previous`: entries of
    previous_submission(), e.g. made up of times and scores) as its previous_submissions, each recorded with the
    score and results.json it got. dates: due_date and late_due_date of submission_metadata()."""
    history, runs = list(previous or []), []
    for number, (upload, created_at) in enumerate(uploads, start=1):
        metadata = submission_metadata(number, created_at=created_at, previous=history, **dates)
        outcome = run(autograder_zip, upload, pathlib.Path(workdir) / str(number), metadata=metadata)
        runs.append(outcome)
        if outcome.results is not None:
            history.append(previous_submission(created_at, outcome.results["score"], outcome.results))
    return runs


def lay_out(autograder_zip, submission, root: pathlib.Path, metadata: dict | None = None) -> pathlib.Path:
    """Build Gradescope's layout at root; returns the run_autograder to start."""
    for folder in ("source", "submission", "results"):
        (root / folder).mkdir(parents=True)
    with zipfile.ZipFile(autograder_zip) as zf:
        zf.extractall(root / "source")
    script = root / "run_autograder"
    shutil.copyfile(root / "source" / "run_autograder", script)
    script.chmod(0o755)
    submission = pathlib.Path(submission)
    if zipfile.is_zipfile(submission):
        with zipfile.ZipFile(submission) as zf:
            zf.extractall(root / "submission")   # zipfile drops absolute and ".." parts of names
    else:
        shutil.copy(submission, root / "submission")
    (root / "submission_metadata.json").write_text(json.dumps(metadata or submission_metadata(), indent=2))
    return script


def run(autograder_zip, submission, workdir, *, python: str = sys.executable, metadata: dict | None = None,
        timeout: float = GRADESCOPE_TIMEOUT_S) -> Run:
    """Grade one upload as Gradescope would, in workdir/autograder (created; must not exist)."""
    root = pathlib.Path(workdir).resolve() / "autograder"
    script = lay_out(autograder_zip, submission, root, metadata)
    env = {**os.environ, image.PYTHON_OVERRIDE: python}
    start = time.perf_counter()
    proc = subprocess.run([str(script)], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout)
    seconds = time.perf_counter() - start
    (root / "results" / "stdout").write_text(proc.stdout)
    results_path = root / "results" / "results.json"
    results = json.loads(results_path.read_text()) if results_path.is_file() else None
    return Run(proc.returncode, results, proc.stdout, seconds, root)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.otter.harness", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("autograder_zip", type=pathlib.Path)
    parser.add_argument("submission", type=pathlib.Path, help="what the student uploads (a .zip, or one file)")
    parser.add_argument("--keep", type=pathlib.Path, metavar="DIR",
                        help="lay the layout out in DIR/autograder and keep it (default: a temporary folder)")
    parser.add_argument("--at", default=CREATED_AT, metavar="TIME",
                        help=f"when the upload is submitted (created_at; default {CREATED_AT})")
    parser.add_argument("--due", default=DUE_DATE, metavar="TIME", help=f"the due date (default {DUE_DATE})")
    parser.add_argument("--previous", action="append", default=[], metavar="TIME=SCORE",
                        help="an earlier submission of the student's, at TIME with SCORE (repeat it: the course's "
                             "submission budget counts them)")
    args = parser.parse_args(argv)
    previous = []
    for text in args.previous:
        at, _, score = text.rpartition("=")
        try:
            previous.append(previous_submission(at, float(score)))
        except ValueError:
            parser.error(f"--previous {text!r}: write TIME=SCORE, e.g. 2026-01-30T09:00:00-08:00=40")
    for path in (args.autograder_zip, args.submission):
        if path.is_dir():
            parser.error(f"{path} is a folder: Gradescope takes files (give the zip `python -m student.submit` "
                         f"writes, or the .py files one by one as a student could upload them)")
        if not path.is_file():
            parser.error(f"{path}: no such file")
    from grader.gradescope import schema

    with tempfile.TemporaryDirectory(prefix="gradescope-harness-") as scratch:
        metadata = submission_metadata(created_at=args.at, due_date=args.due, previous=previous)
        outcome = run(args.autograder_zip, args.submission, args.keep or scratch, metadata=metadata)
        print(outcome.stdout, end="")
        print(f"\nrun_autograder exit {outcome.returncode} after {outcome.seconds:.1f} s")
        if outcome.results is None:
            print("no results/results.json: Gradescope would show 'The autograder failed to execute correctly'")
            return 1
        print(json.dumps({k: v for k, v in outcome.results.items() if k != "tests"}, indent=2))
        found = schema.problems(outcome.results)
        print(schema.summary(found))
    return 0 if outcome.returncode == 0 and not found else 1


if __name__ == "__main__":
    sys.exit(main())
