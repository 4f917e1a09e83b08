"""A regrade that says why: a submission changed since it was graded is graded again, and --force regrades
chosen ones; everything else keeps its result untouched."""
from __future__ import annotations

import csv
import os
import pathlib
import shutil
import subprocess

import pytest

from autograder.samples import write_submission
from grader.row import Row
from grader.run import batch, environment, submissions, unpacking
from tests import grading_command


def grade(*args, command=grading_command.INSTRUCTORS) -> subprocess.CompletedProcess:
    return grading_command.grade(*args, "--workers", "2", command=command)


def grade_only(*args) -> subprocess.CompletedProcess:
    """The runtime's batch command: what resumes and regrades; the class reports have nothing to say here."""
    return grade(*args, command=grading_command.RUNTIME)


def rows(out) -> dict[str, dict]:
    return {row["submission"]: row for row in csv.DictReader((out / "grades.csv").open())}


@pytest.mark.slow
def test_a_changed_submission_is_graded_again_and_says_so_and_force_regrades_by_name(tmp_path):
    write_submission(tmp_path / "class" / "alice")
    fixed = write_submission(tmp_path / "class" / "bob", solution=False)
    out = tmp_path / "out"
    assert grade_only(tmp_path / "class", "--out", out).returncode == 0
    assert float(rows(out)["bob"]["score"]) == 0.0
    alice_result = out / "results" / "alice.json"
    alice_time = alice_result.stat().st_mtime_ns

    shutil.rmtree(fixed)
    write_submission(fixed, solution=True)   # bob uploads his finished work under the same name
    proc = grade_only(tmp_path / "class", "--out", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    bob = rows(out)["bob"]
    assert float(bob["score"]) == 100.0
    assert bob["message"].startswith("graded again: the submission changed since it was graded (it scored 0 before)")
    assert alice_result.stat().st_mtime_ns == alice_time, "an unchanged submission was graded again"

    proc = grade_only(tmp_path / "class", "--out", out, "--force", "alice")
    assert proc.returncode == 0 and "graded again (--force" in rows(out)["alice"]["message"]
    assert grade_only(tmp_path / "class", "--out", out, "--force", "carol").returncode == 2


def test_the_fingerprint_follows_content_not_names_or_times(tmp_path):
    first = write_submission(tmp_path / "a")
    second = write_submission(tmp_path / "b")
    scratch = str(tmp_path)
    assert unpacking.fingerprint(str(first), scratch) == unpacking.fingerprint(str(second), scratch)
    os.utime(first / "student" / "scaling.py", (0, 0))
    assert unpacking.fingerprint(str(first), scratch) == unpacking.fingerprint(str(second), scratch)
    (second / "student" / "scaling.py").write_text("# changed\n")
    assert unpacking.fingerprint(str(first), scratch) != unpacking.fingerprint(str(second), scratch)
    assert sorted(os.listdir(tmp_path)) == ["a", "b"], "the unpacked copies were left behind"


def test_the_fingerprint_is_of_exactly_what_is_graded(tmp_path):
    """What unpacking skips changes nothing (.git, bytecode caches), however much of it there is; every graded
    file counts, however many files come before it (a 2,001-object .git used to exhaust a cap on files read)."""
    scratch = str(tmp_path)
    submission = write_submission(tmp_path / "class" / "eve", solution=False)
    objects = submission / ".git" / "objects"
    objects.mkdir(parents=True)
    for index in range(2001):
        (objects / f"{index:04d}").write_bytes(b"x")
    (submission / "student" / "__pycache__").mkdir()
    (submission / "student" / "__pycache__" / "scaling.cpython-311.pyc").write_bytes(b"cached")
    stubs = unpacking.fingerprint(str(submission), scratch)
    assert stubs.startswith(unpacking.CONTENT_DIGEST)
    (objects / "extra").write_bytes(b"y")
    (submission / "student" / "__pycache__" / "scaling.cpython-311.pyc").write_bytes(b"other")
    assert unpacking.fingerprint(str(submission), scratch) == stubs, "a skipped file changed the digest"
    shutil.rmtree(submission / "student")
    shutil.copytree(write_submission(tmp_path / "reference") / "student", submission / "student")
    assert unpacking.fingerprint(str(submission), scratch) != stubs, "the graded files changed, the digest not"


def test_a_submission_refused_at_unpacking_has_a_digest_of_why(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "scratch").mkdir()
    digest = unpacking.fingerprint(str(empty), str(tmp_path / "scratch"))
    (empty / "notes.txt").write_text("no package")
    assert unpacking.fingerprint(str(empty), str(tmp_path / "scratch")) not in (digest, "")


def test_a_digest_of_an_earlier_kind_is_graded_again_and_says_why():
    """An earlier grader's digest could have missed a change (it stopped at 2,000 files): not trusted."""
    found = [submissions.Submission(name, name, f"/class/{name}") for name in ("old", "same", "none")]
    now = unpacking.CONTENT_DIGEST + "1"
    done = {"/class/old": Row(status="graded", content="sha256:1"),
            "/class/same": Row(status="graded", content=now), "/class/none": Row(status="graded")}
    again = batch.regrades(found, done, dict.fromkeys(done, now))
    assert list(again) == ["/class/old"] and "earlier version of the grader" in again["/class/old"]


@pytest.mark.slow
def test_a_folder_name_that_is_not_utf8_keeps_its_row_across_a_resume(tmp_path):
    """The row is written as valid text; the submission's identity must still match it on the next run, or it
    is graded again on every resume under a new results file."""
    classroom = tmp_path / "class"
    classroom.mkdir()
    odd = os.path.join(os.fsencode(classroom), b"caf\xe9")
    write_submission(pathlib.Path(os.fsdecode(odd)), solution=False)
    out = tmp_path / "out"
    assert grade(classroom, "--out", out).returncode == 0
    results = sorted((out / "results").iterdir())
    assert len(results) == 1
    stamp = results[0].stat().st_mtime_ns
    proc = grade(classroom, "--out", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted((out / "results").iterdir()) == results, "graded again under a new results file"
    assert results[0].stat().st_mtime_ns == stamp, "graded again"
    assert len(rows(out)) == 1


METADATA = """\
submission_1:
  :submitters:
  - :name: Alice
    :sid: '1'
  :created_at: 2026-11-20 20:00:00.000000000 -05:00
  :score: 100.0
submission_2:
  :submitters:
  - :name: Bob
    :sid: '2'
  :created_at: 2026-11-21 02:30:00 -05:00
  :score: 50.0
"""


@pytest.mark.slow
def test_an_export_graded_twice_then_regraded_says_what_differs_from_gradescope_and_from_the_earlier_run(tmp_path):
    export = tmp_path / "export"
    write_submission(export / "submission_1")
    bob = write_submission(export / "submission_2", solution=False)
    (export / "submission_metadata.yml").write_text(METADATA)
    out = tmp_path / "out"
    proc = grade(export, "--out", out, "--repeat", "2", "--due", "2026-11-20T23:59:00-05:00")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert {name: row["late"] for name, row in rows(out).items()} == {"Alice": "0.0", "Bob": "2.52"}
    assert {row["environment"] for row in rows(out).values()} == {environment.describe()}   # what graded them
    assert [row["submission"] for row in csv.DictReader((out / "gradescope.csv").open())] == ["Bob"]
    assert list(csv.DictReader((out / "repeat.csv").open())) == [] and "repeat: 0 submission(s)" in proc.stdout
    assert (out / "repeat-2" / "results" / "Alice.json").is_file()

    proc = grade(export, "--out", out, "--timeout", "7")   # other limits: the results kept are stale, and it says so
    assert proc.returncode == 0 and "warning: 2 result(s) kept" in proc.stdout and "--regrade" in proc.stdout

    shutil.rmtree(bob)
    write_submission(bob)   # Bob's work changed too: a regrade must show it, and show nothing for Alice
    proc = grade(export, "--out", out, "--timeout", "7", "--regrade")
    assert proc.returncode == 0, proc.stderr[-2000:]
    [earlier] = (out / "earlier").iterdir()
    assert sorted(p.name for p in (earlier / "results").iterdir()) == ["Alice.json", "Bob.json"]
    changed = list(csv.DictReader((out / "changes.csv").open()))
    assert [(row["submission"], row["before_score"], row["after_score"]) for row in changed] == [
        ("Bob", "0.0", "100.0")]
    assert int(changed[0]["tests_flipped"]) > 10 and "failed -> passed" in changed[0]["flips"]
    assert "warning" not in proc.stdout
