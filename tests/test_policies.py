"""The course's policies as pure decisions (grader/policies/): what lateness costs, and when a submission counts
against the submission budget. No grading: times, scores and settings in, the decision and its words out."""
from __future__ import annotations

import csv
import dataclasses
import datetime

import pytest

from assignment.spec import SPEC
from autograder.exports import read_metadata
from autograder.reports import recorded_scores
from grader.policies import budget, late
from grader.row import Row
from grader.run import changes, environment, gradebook, recorded, submissions

DEFAULTS = SPEC.settings.__class__()
PER_DAY = dataclasses.replace(DEFAULTS, late_policy="per_day", late_deduction=10.0, late_cap=30.0)


def test_no_policy_and_unknown_lateness_cost_nothing():
    assert late.decide(100.0, 80.0, DEFAULTS) == late.Late(0.0, 80.0, "")
    assert late.decide(None, 80.0, PER_DAY) == late.Late(0.0, 80.0, "")
    assert late.decide(0.0, 80.0, PER_DAY).percent == 0.0


@pytest.mark.parametrize(("settings", "hours", "deducted"), [
    (PER_DAY, 0.01, 10.0), (PER_DAY, 24.0, 10.0), (PER_DAY, 24.01, 20.0), (PER_DAY, 500.0, 30.0),
    (dataclasses.replace(PER_DAY, late_grace_hours=1.0), 0.99, 0.0),
    (dataclasses.replace(PER_DAY, late_grace_hours=1.0), 25.0, 10.0),
    (dataclasses.replace(DEFAULTS, late_policy="per_hour", late_deduction=5.0), 2.5, 15.0),
    (dataclasses.replace(DEFAULTS, late_policy="late_days", late_days=2.0), 48.0, 0.0),
    (dataclasses.replace(DEFAULTS, late_policy="late_days", late_days=2.0), 48.5, 100.0),
])
def test_each_policy_deducts_per_started_unit_after_the_grace_up_to_the_cap(settings, hours, deducted):
    assert late.percent(hours, settings) == deducted


def test_the_deduction_is_of_the_raw_score_and_says_why():
    decision = late.decide(26.0, 80.0, PER_DAY)
    assert decision.grade == 64.0   # 20% of 80, from the raw score: applying it again to 80 gives 64 again
    assert "26 hours after the due date" in decision.words and "20%" in decision.words and "80 -> 64" in decision.words
    assert late.decide(1.0, 80.0, PER_DAY, closed=True).percent == 30.0


ZONE = datetime.timezone(datetime.timedelta(hours=-5))
START = datetime.datetime(2026, 11, 16, 9, 0, tzinfo=ZONE)
THREE_A_DAY = dataclasses.replace(DEFAULTS, allowed_submissions=3, submission_window_hours=24.0)


def history(*hours_and_scores, counted=True):
    return [budget.Earlier(START + datetime.timedelta(hours=h), s, counted) for h, s in hours_and_scores]


def test_no_budget_or_no_time_counts_every_submission():
    earlier = history((0, 10.0), (1, 20.0), (2, 30.0))
    assert budget.decide(START + datetime.timedelta(hours=3), earlier, DEFAULTS).counts
    assert budget.decide(None, earlier, THREE_A_DAY).counts


def test_a_fourth_submission_in_a_day_keeps_the_last_counted_score_and_says_when_the_next_counts():
    earlier = history((0, 10.0), (1, 90.0), (2, 30.0))
    assert budget.decide(START + datetime.timedelta(hours=2, minutes=1), earlier[:2], THREE_A_DAY).counts
    over = budget.decide(START + datetime.timedelta(hours=3), earlier, THREE_A_DAY)
    assert not over.counts and over.kept_score == 30.0   # the last counted one's, not the best, never lower
    assert over.next_at == START + datetime.timedelta(hours=24)
    assert "2026-11-17 09:00 -0500" in over.words and "30" in over.words and "hidden tests" in over.words
    # one that did not count is not counted, and keeps nothing: the score stays the last counted one's
    earlier += history((4, 0.0), counted=False)
    assert budget.decide(START + datetime.timedelta(hours=5), earlier, THREE_A_DAY).kept_score == 30.0
    assert budget.decide(START + datetime.timedelta(hours=24), earlier, THREE_A_DAY).counts   # the window rolled


def test_the_words_name_a_minute_at_which_a_submission_counts_when_the_slot_reopens_within_a_minute():
    """Gradescope's times carry seconds: a slot that reopens at 09:00:32 is named 09:01 (at 09:00 one is refused)."""
    first = START + datetime.timedelta(seconds=32)
    earlier = [budget.Earlier(first, 10.0, True), *history((1, 20.0), (2, 30.0))]
    over = budget.decide(START + datetime.timedelta(hours=3), earlier, THREE_A_DAY)
    assert "until 2026-11-17 09:01 -0500" in over.words and over.next_at == START + datetime.timedelta(hours=24,
                                                                                                         minutes=1)
    assert not budget.decide(START + datetime.timedelta(hours=24), earlier, THREE_A_DAY).counts
    assert budget.decide(over.next_at, earlier, THREE_A_DAY).counts


def test_a_week_of_resubmissions_at_three_a_day_counts_three_in_any_day():
    earlier: list[budget.Earlier] = []
    counted_at = []
    for hour in range(0, 24 * 7, 2):   # every two hours for a week
        now = START + datetime.timedelta(hours=hour)
        decision = budget.decide(now, earlier, THREE_A_DAY)
        earlier.append(budget.Earlier(now, float(hour), decision.counts))
        if decision.counts:
            counted_at.append(now)
    assert len(counted_at) == 3 * 7
    pairs = zip(counted_at, counted_at[3:], strict=False)   # no four in any 24 hours
    assert all(later - first >= datetime.timedelta(hours=24) for first, later in pairs)


TEN_PERCENT_A_DAY = dataclasses.replace(DEFAULTS, late_policy="per_day", late_deduction=10.0)
LATE_CLASS = "".join(f"""\
submission_{number}:
  :submitters:
  - :name: {name}
    :sid: '{number}'
  :created_at: {created}
  :score: {recorded}
""" for number, name, created, recorded in (
    (1, "Ada", "2026-11-20 20:00:00 -05:00", 80.0),     # on time
    (2, "Bob", "2026-11-21 02:30:00 -05:00", 72.0),     # 2.52 hours late: a started day
    (3, "Cy", "2026-11-22 01:00:00 -05:00", 80.0),      # 25.02 hours: two
    (4, "Di", "2026-11-20 20:00:00 -05:00", "")))        # never scored by Gradescope


def test_a_ten_percent_a_day_policy_on_an_export_with_late_students_keeps_the_raw_score_beside_the_grade(tmp_path):
    export = tmp_path / "export"
    for number in range(1, 5):
        (export / f"submission_{number}" / "student").mkdir(parents=True)
    (export / "submission_metadata.yml").write_text(LATE_CLASS)
    found = submissions.discover([export], staging=str(tmp_path / "staging"), read_metadata=read_metadata,
                                 due=recorded.when("2026-11-20T23:59:00-05:00"))
    rows = [late.on_row(Row(status="graded", score=80.0, slug=s.slug, **gradebook.identity(s)),
                                       TEN_PERCENT_A_DAY) for s in found]
    assert [(r.submission, r.late, r.late_penalty, r.score, r.grade) for r in rows] == [
        ("Ada", 0.0, 0.0, 80.0, 80.0), ("Bob", 2.52, 10.0, 80.0, 72.0), ("Cy", 25.02, 20.0, 80.0, 64.0),
        ("Di", 0.0, 0.0, 80.0, 80.0)]
    gradebook.write_csv(tmp_path, rows)
    written = {r["name"]: r for r in csv.DictReader((tmp_path / "grades.csv").open())}
    assert (written["Cy"]["score"], written["Cy"]["late_penalty"], written["Cy"]["grade"]) == ("80.0", "20.0", "64.0")
    # read back (a resumed run, a regrade) or under a changed policy: from the raw score, never compounded
    again = [late.on_row(Row.from_json(r.to_json()), TEN_PERCENT_A_DAY) for r in rows]
    assert again == rows
    hourly = dataclasses.replace(TEN_PERCENT_A_DAY, late_policy="per_hour", late_deduction=1.0)
    assert [late.on_row(r, hourly).grade for r in rows] == [80.0, 77.6, 59.2, 80.0]
    assert [late.on_row(r, DEFAULTS).grade for r in rows] == [80.0] * 4   # off: grade is score
    # gradescope.csv compares like with like: the raw score, or the grade where Gradescope's runtime applied the
    # policy (Bob's 72 is what it records then; Cy's 80 is not)
    assert [r.submission for r in recorded_scores.disagreements(rows, TEN_PERCENT_A_DAY)] == ["Bob"]
    on_gradescope = dataclasses.replace(TEN_PERCENT_A_DAY, late_on_gradescope=True)
    assert [r.submission for r in recorded_scores.disagreements(rows, on_gradescope)] == ["Cy"]


def test_what_a_score_was_graded_on_names_the_gpu_only_in_a_gpu_run_and_a_change_of_it_shows(tmp_path):
    proc = tmp_path / "nvidia"
    (proc / "gpus" / "0000:01:00.0").mkdir(parents=True)
    (proc / "version").write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Thu Jan  1 2026\n")
    (proc / "gpus" / "0000:01:00.0" / "information").write_text("Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\n")
    on_cpu, on_gpu = environment.describe(False, proc), environment.describe(True, proc)
    assert on_cpu.startswith("python 3.") and "; torch 2." in on_cpu and "GPU" not in on_cpu
    assert on_gpu.startswith(on_cpu + "; CUDA ") and on_gpu.endswith("; driver 570.86.15; GPU NVIDIA H200")
    # a regrade on another environment is listed in changes.csv even where no score moved
    before, after = (Row(status="graded", submission="ada", score=100.0, slug="ada", environment=where)
                     for where in (on_cpu, on_gpu))
    (tmp_path / "results").mkdir()
    assert changes.compare(({"s": before}, tmp_path / "results"), ({"s": before}, tmp_path / "results")) == []
    [change] = changes.compare(({"s": before}, tmp_path / "results"), ({"s": after}, tmp_path / "results"))
    changes.write(tmp_path / "changes.csv", [change])
    [written] = csv.DictReader((tmp_path / "changes.csv").open())
    assert written["change"] == "0.0" and written["environment"] == f"{on_cpu} -> {on_gpu}"
