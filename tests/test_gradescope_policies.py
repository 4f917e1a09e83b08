"""The course's policies on Gradescope (grader/gradescope/course_policies.py): the submission budget read from
previous_submissions, the late policy from created_at and the due dates; a student within both sees nothing new.
The decisions themselves are tests/test_policies.py's; the end-to-end case plays a history through the harness."""
from __future__ import annotations

import copy
import dataclasses
import zipfile

from assignment.spec import SPEC
from autograder.otter import harness, packaging
from grader.gradescope import course_policies
from grader.row import Row, of_results

DEFAULTS = SPEC.settings.__class__()
# The recipe's settings: 3 submissions count in any day, 10% per started day late, on Gradescope too.
BOTH = dataclasses.replace(DEFAULTS, allowed_submissions=3, late_policy="per_day", late_on_gradescope=True)
DUE = "2026-01-31T23:00:00.000000-08:00"
EARLIER = [harness.previous_submission("2026-01-30T09:00:00-08:00", 40.0),
           harness.previous_submission("2026-01-30T10:00:00-08:00", 70.0),
           harness.previous_submission("2026-01-30T10:30:00-08:00", 55.0)]


def graded(score: float = 90.0) -> dict:
    """A results.json as the engine and view leave it (a test entry, the row the batch reads back)."""
    row = Row(status="graded", score=score, max_score=100.0, grade=score)
    return {"score": score, "output": "Your submission was received and graded.", "visibility": "after_published",
            "tests": [{"name": "test_a", "score": score, "max_score": 100.0, "visibility": "after_published"}],
            "extra_data": {"gradebook_row": row.to_json(), "flags": []}}


def empty_upload(path):
    """An upload with nothing graded in it: cheap, where the test is about what happens around the grading."""
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("student/__init__.py", "")
    return path


def metadata(created_at: str, previous=(), **dates) -> dict:
    return harness.submission_metadata(created_at=created_at, previous=list(previous), **dates)


def test_with_neither_policy_set_the_results_are_untouched():
    data = metadata("2026-02-05T00:00:00-08:00", EARLIER * 5)   # late, and many submissions
    assert course_policies.allowance(data, DEFAULTS).counts
    assert course_policies.applied(graded(), data, DEFAULTS) == graded()


def test_within_the_budget_and_on_time_a_student_sees_nothing_new():
    data = metadata("2026-01-30T11:00:00-08:00", EARLIER[:1])
    assert course_policies.allowance(data, BOTH).counts
    shown = course_policies.applied(graded(), data, BOTH)
    assert {key: value for key, value in shown.items() if key != "extra_data"} == {
        key: value for key, value in graded().items() if key != "extra_data"}
    assert shown["extra_data"][course_policies.COUNTED] is True   # the next submission's budget reads it


def test_past_the_budget_the_last_counted_score_is_kept_and_nothing_hidden_is_shown():
    data = metadata("2026-01-30T11:00:00-08:00", EARLIER)
    allowance = course_policies.allowance(data, BOTH)
    assert not allowance.counts and allowance.kept_score == 55.0   # the last counted one's: never lower
    kept = course_policies.not_counted(allowance, 0.1)
    assert (kept["score"], kept["tests"], kept["extra_data"]) == (55.0, [], {course_policies.COUNTED: False})
    assert "2026-01-31 09:00 -0800" in kept["output"]
    hidden = course_policies.not_counted(allowance, 0.1, graded(100.0))   # over_budget = "grade_hidden"
    assert hidden["score"] == 55.0 and {t["visibility"] for t in hidden["tests"]} == {"hidden"}
    # it does not count against the next one: a third submission after the first has left the window counts
    later = metadata("2026-01-31T09:30:00-08:00", [*EARLIER, harness.previous_submission(
        "2026-01-30T11:00:00-08:00", 55.0, kept)])
    assert course_policies.allowance(later, BOTH).counts


def test_late_on_gradescope_deducts_from_the_score_says_so_and_records_it_in_the_row():
    data = metadata("2026-02-02T00:30:00-08:00")   # 25.5 hours late: two started days
    shown = course_policies.applied(graded(90.0), data, BOTH)
    assert shown["score"] == 72.0 and "20% of the score deducted" in shown["output"]
    row = of_results(shown)
    assert (row.score, row.late, row.late_penalty, row.grade) == (90.0, 25.5, 20.0, 72.0)
    off = dataclasses.replace(BOTH, late_on_gradescope=False)   # the batch's gradebook applies it instead
    assert course_policies.applied(graded(90.0), data, off)["score"] == 90.0
    closed = metadata("2026-02-02T00:30:00-08:00", late_due_date="2026-02-01T23:00:00-08:00")
    assert course_policies.applied(graded(90.0), closed, BOTH)["score"] == 0.0   # past the late due date: the cap
    extended = copy.deepcopy(data)
    extended["users"][0]["assignment"] = {"due_date": "2026-02-03T23:00:00-08:00"}   # this student's extension
    assert course_policies.applied(graded(90.0), extended, BOTH)["score"] == 90.0


def test_a_history_played_through_the_harness_shows_each_policy_act(gradescope_reference, tmp_path):
    """docs/instructors.md's recipe "Set a submission budget and a late policy", performed."""
    autograder = packaging.build_autograder_zip(tmp_path / "autograder.zip", {
        "allowed_submissions": 3, "late_policy": "per_day", "late_on_gradescope": True})
    upload = gradescope_reference.root.parent.parent / "reference.zip"   # the reference's upload
    over, late = harness.play(autograder, [(upload, "2026-01-30T11:00:00-08:00"),    # a fourth in a day
                                           (upload, "2026-02-02T00:30:00-08:00")],   # the next day, 25.5 h late
                              tmp_path / "history", previous=EARLIER, due_date=DUE)
    assert over.returncode == 0 and over.results["score"] == 55.0 and over.results["tests"] == []
    assert "none left until 2026-01-31 09:00 -0800" in over.results["output"]
    assert over.stdout.startswith("Past the course's submission budget: not counted")   # the instructor's view
    assert late.returncode == 0, late.stdout[-3000:]
    assert late.results["score"] == 80.0 and "20% of the score deducted" in late.results["output"]
    assert late.results["tests"] == gradescope_reference.results["tests"]
    assert "Graded on: python 3." in late.stdout and "; suite sha256:" in late.stdout   # to reproduce the score


def test_past_the_budget_an_engine_failure_still_keeps_the_last_counted_score(tmp_path):
    """over_budget = "grade_hidden" grades for the instructor: where that grading fails (the grader's fault), the
    student keeps the last counted score, never the failure's 0."""
    built = packaging.build_autograder_zip(tmp_path / "built.zip", {"allowed_submissions": 3,
                                                                    "over_budget": "grade_hidden"})
    broken = tmp_path / "autograder.zip"
    with zipfile.ZipFile(built) as source, zipfile.ZipFile(broken, "w") as target:
        for item in source.infolist():
            exploded = item.filename == "grader/run/command.py"
            target.writestr(item, b"import sys\nsys.exit(3)\n" if exploded else source.read(item))
    upload = empty_upload(tmp_path / "upload.zip")
    [run] = harness.play(broken, [(upload, "2026-01-30T11:00:00-08:00")], tmp_path / "history", previous=EARLIER)
    assert run.results["score"] == 55.0 and run.results["extra_data"] == {course_policies.COUNTED: False}


def test_the_harness_command_plays_a_history_of_times_and_scores(tmp_path, capsys):
    kept = packaging.build_autograder_zip(tmp_path / "kept.zip", {"allowed_submissions": 3})
    upload = empty_upload(tmp_path / "upload.zip")
    history = [f"--previous={p['submission_time']}={p['score']}" for p in EARLIER]
    assert harness.main([str(kept), str(upload), "--at", "2026-01-30T11:00:00-08:00", *history]) == 0
    assert '"score": 55.0' in capsys.readouterr().out   # a fourth in a day (keep_last: not even graded)
