"""A regrade that says why: a submission changed since it was graded is graded again, and --force regrades
chosen ones; everything else keeps its result untouched."""
from __future__ import annotations

import csv
import os
import shutil
import subprocess

import pytest

from autograder.engine import submissions
from autograder.samples import write_submission
from tests import grading_command

pytestmark = pytest.mark.slow


def grade(*args) -> subprocess.CompletedProcess:
    return grading_command.grade(*args, "--workers", "2")


def rows(out) -> dict[str, dict]:
    return {row["submission"]: row for row in csv.DictReader((out / "grades.csv").open())}


def test_a_changed_submission_is_graded_again_and_says_so_and_force_regrades_by_name(tmp_path):
    write_submission(tmp_path / "class" / "alice")
    fixed = write_submission(tmp_path / "class" / "bob", solution=False)
    out = tmp_path / "out"
    assert grade(tmp_path / "class", "--out", out).returncode == 0
    assert float(rows(out)["bob"]["score"]) == 0.0
    alice_result = out / "results" / "alice.json"
    alice_time = alice_result.stat().st_mtime_ns

    shutil.rmtree(fixed)
    write_submission(fixed, solution=True)   # bob uploads his finished work under the same name
    proc = grade(tmp_path / "class", "--out", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    bob = rows(out)["bob"]
    assert float(bob["score"]) == 100.0
    assert bob["message"].startswith("graded again: the submission changed since it was graded (it scored 0 before)")
    assert alice_result.stat().st_mtime_ns == alice_time, "an unchanged submission was graded again"

    proc = grade(tmp_path / "class", "--out", out, "--force", "alice")
    assert proc.returncode == 0 and "graded again (--force" in rows(out)["alice"]["message"]
    assert grade(tmp_path / "class", "--out", out, "--force", "carol").returncode == 2


def test_the_fingerprint_follows_content_not_names_or_times(tmp_path):
    first = write_submission(tmp_path / "a")
    second = write_submission(tmp_path / "b")
    assert submissions.fingerprint(str(first)) == submissions.fingerprint(str(second))
    os.utime(first / "student" / "scaling.py", (0, 0))
    assert submissions.fingerprint(str(first)) == submissions.fingerprint(str(second))
    (second / "student" / "scaling.py").write_text("# changed\n")
    assert submissions.fingerprint(str(first)) != submissions.fingerprint(str(second))
