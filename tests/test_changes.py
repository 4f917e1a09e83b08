"""A regrade that proves itself, and what Gradescope recorded: the files the batch writes for them, from data."""
from __future__ import annotations

import csv
import datetime
import json

from assignment.spec import SPEC
from autograder.reports import recorded_scores
from grader.contain.limits import Limits
from grader.row import Row
from grader.run import changes, recorded
from grader.run.submissions import _field


def results(folder, slug, verdicts: dict[str, str]):
    (folder / "results").mkdir(parents=True, exist_ok=True)
    tests = [{"name": name, "max_score": 1.0, "score": float(v == "passed"), "status": v}
             for name, v in verdicts.items()]
    tests.append({"name": "Summary", "output": "not worth points"})
    (folder / "results" / f"{slug}.json").write_text(json.dumps({"tests": tests}))
    return Row(status="graded", submission=slug, slug=slug, score=sum(v == "passed" for v in verdicts.values()))


def test_only_the_submissions_whose_tests_flipped_are_listed_with_their_flips(tmp_path):
    before, after = tmp_path / "before", tmp_path / "after"
    same = {"Part 1 (Scaling): t1": "passed", "Part 2 (Masking): t2": "failed"}
    rows_before = {"a": results(before, "a", same), "b": results(before, "b", same),
                   "c": results(before, "c", {"Part 1 (Scaling): t1": "passed"})}
    rows_after = {"a": results(after, "a", same),
                  "b": results(after, "b", {**same, "Part 1 (Scaling): t1": "failed"}),
                  "c": results(after, "c", {"Part 1 (Scaling): t1": "passed", "Part 3 (Heads): new": "passed"})}
    found = changes.compare((rows_before, before / "results"), (rows_after, after / "results"))
    assert [(c.after.submission, c.difference, c.flips) for c in found] == [
        ("b", -1, [("Part 1 (Scaling): t1", "passed", "failed")]),
        ("c", 1, [("Part 3 (Heads): new", "absent", "passed")])]
    changes.write(tmp_path / "changes.csv", found)
    listed = list(csv.DictReader((tmp_path / "changes.csv").open()))
    assert [row["flips"] for row in listed] == [
        "Part 1 (Scaling): t1: passed -> failed",
        "Part 3 (Heads): new: not graded (skipped, or not in that suite) -> passed"]


def test_what_a_result_was_graded_with_follows_the_limits(tmp_path):
    assert changes.graded_with(Limits()) == changes.graded_with(Limits())
    assert changes.graded_with(Limits()) != changes.graded_with(Limits(call_timeout=Limits().call_timeout + 1))


def test_what_a_result_was_graded_with_follows_what_can_change_a_score_and_nothing_else(monkeypatch):
    before = changes.graded_with(Limits())
    monkeypatch.setattr(changes, "SPEC", SPEC.with_settings({"late_policy": "per_day", "allowed_submissions": 3,
                                                             "show_hidden": False}))
    assert changes.graded_with(Limits()) == before   # a late policy, a budget, a visibility: no regrade asked
    monkeypatch.setattr(changes, "SPEC", SPEC.with_settings({"forbidden_calls": "flag"}))
    assert changes.graded_with(Limits()) != before


def test_an_archive_keeps_the_earlier_run_whole(tmp_path):
    assert changes.archive(tmp_path) is None   # nothing graded there yet: nothing to keep
    results(tmp_path, "a", {"t": "passed"})
    (tmp_path / "grades.csv").write_text("name\n")
    kept = changes.archive(tmp_path)
    assert kept.parent == tmp_path / "earlier" and (kept / "results" / "a.json").is_file()
    assert (kept / "grades.csv").is_file() and not (tmp_path / "results").exists()


def test_the_export_metadata_gives_the_recorded_score_and_the_hours_late():
    due = datetime.datetime(2026, 11, 20, 23, 59, tzinfo=datetime.UTC)
    entry = {":score": 85.0, ":created_at": "2026-11-21 01:29:00.123456789 +00:00"}
    record = recorded.recorded(entry, _field, due)
    assert record.score == 85.0 and recorded.hours_late(record) == 1.5
    on_time = recorded.recorded({":created_at": "2026-11-20 15:00:00 -08:00"}, _field, due)
    assert recorded.hours_late(on_time) == 0.0
    own_due = recorded.recorded({":created_at": "2026-11-22 00:00:00 +00:00",
                                 ":assignment": {":due_date": "2026-11-21T00:00:00+00:00"}}, _field, due)
    assert recorded.hours_late(own_due) == 24.0   # the export's own due date wins over --due
    assert recorded.hours_late(recorded.recorded({":created_at": "2026-11-22 00:00"}, _field, due)) is None
    assert recorded.hours_late(recorded.recorded({":created_at": "yesterday"}, _field, None)) is None


def test_every_score_that_differs_from_gradescopes_is_listed_and_no_other(tmp_path):
    rows = [Row.from_json(row) for row in (
        {"submission": "a", "score": 90.0, "gradescope_score": 90.004, "status": "graded"},
        {"submission": "b", "score": 90.0, "gradescope_score": 85.0, "status": "graded", "submission_id": "7",
         "submitters": [{"name": "B", "sid": "0042", "email": ""}]},
        {"submission": "c", "score": 0.0, "gradescope_score": "", "status": "error"})]
    assert [r.submission for r in recorded_scores.write(tmp_path, rows)] == ["b"]
    listed = list(csv.DictReader((tmp_path / "gradescope.csv").open()))
    assert [(r["submission"], r["students"], r["difference"]) for r in listed] == [("b", "B (0042)", "5.0")]
    assert recorded_scores.write(tmp_path / "none", rows[2:]) == []   # nothing recorded: no file
    assert not (tmp_path / "none").exists()


def test_what_a_result_was_graded_with_is_known_where_the_reference_is_not_shipped(tmp_path, monkeypatch):
    """autograder.zip carries the suite and the spec but no reference: the digest still works there."""
    monkeypatch.setattr(changes, "SUITE_FILES", (*changes.SUITE_FILES, tmp_path / "absent", tmp_path / "gone.toml"))
    assert changes.graded_with(Limits()).startswith("sha256:")
