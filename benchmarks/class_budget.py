"""Step 2c of class_check.py: a week of resubmissions by students of the generated class under a submission budget
of 3 in any 24 hours, played through Gradescope's harness with the built autograder.zip (issue 51).

    problems = week(members, folders, scores, work)

Three students upload, one after another, different members of the class (a bug, another bug, a correct one...),
so scores move up and down, at irregular times given to the second as Gradescope's created_at has them: bursts
within an hour, quiet days, uploads at the very second a slot reopens, one a second before. Whether each counts
and when the next one would is worked out here from the times alone (not by grader/policies/budget.py), then
checked against the results: no more than 3 counted in any rolling 24 hours; a counted upload scores what step 1's
grades.csv gave that member; one that does not count keeps the last counted one's score, shows no test and names
the first minute at which a submission counts again. The third student stays within the budget (3 in just over a
day) and is played again with no budget: what that student reads must be the same.
"""
from __future__ import annotations

import datetime
import math
import pathlib
import shutil
import time
from dataclasses import dataclass

from autograder.otter import harness, packaging
from grader.gradescope import course_policies
from tests.routes import submit

ALLOWED, WINDOW_HOURS = 3, 24.0
WINDOW = datetime.timedelta(hours=WINDOW_HOURS)
ZONE = datetime.timezone(datetime.timedelta(hours=-8))   # the course's time zone, as created_at carries it
MONDAY = datetime.datetime(2026, 1, 19, tzinfo=ZONE)
# Per student, (day, "HH:MM:SS", what is uploaded): "low", "mid" and "high" are bugs of rising scores, "right" a
# correct member. The comments say what the budget should do; the check does not read them.
WEEKS = {
    "burst": [
        (0, "10:00:32", "low"), (0, "10:09:05", "mid"), (0, "10:25:47", "right"),   # three in half an hour
        (0, "10:40:00", "high"), (0, "10:55:10", "low"),    # over: keep 100, next 10:00:32 tomorrow
        (1, "10:00:32", "high"),                            # the very second the first slot reopens
        (1, "10:05:00", "low"),                             # over: keeps high's score (below the best, 100)
        (1, "10:09:05", "mid"), (3, "15:12:00", "right"),   # the second slot reopens; a quiet day
        (5, "08:00:00", "low"), (5, "08:20:00", "mid"), (5, "08:40:00", "low"), (5, "08:45:00", "high"),
        (6, "07:59:59", "right"), (6, "08:00:00", "right"),   # a second too early, then on the second
    ],
    "evening": [
        (0, "21:00:00", "mid"), (1, "20:00:00", "high"), (1, "20:30:00", "low"),
        (1, "20:45:00", "right"),                           # over: keeps low's score
        (1, "21:00:00", "right"), (4, "09:00:00", "high"), (6, "23:30:00", "right"),
    ],
    "within": [   # three within a day, and a fourth the second the first leaves its window: all count
        (0, "12:00:00", "low"), (1, "09:00:00", "mid"), (1, "11:59:59", "high"), (1, "12:00:00", "right"),
    ],
}
WITHIN = "within"
MEASURED = ("seconds", "peak_memory_mib", "source")   # a row's measures, and a digest of where it was unpacked


@dataclass(frozen=True)
class Fate:
    at: datetime.datetime
    counts: bool
    next_at: datetime.datetime | None   # does not count: the first moment one would


def moment(day: int, clock: str) -> datetime.datetime:
    hours, minutes, seconds = map(int, clock.split(":"))
    return MONDAY + datetime.timedelta(days=day, hours=hours, minutes=minutes, seconds=seconds)


def in_window(moments: list[datetime.datetime], now: datetime.datetime) -> int:
    """How many of moments lie in the WINDOW that ends at now."""
    return sum(now - WINDOW < earlier <= now for earlier in moments)


def expected(times: list[datetime.datetime]) -> list[Fate]:
    """Each upload's fate under ALLOWED in any WINDOW, from the times alone: it counts when fewer than ALLOWED
    counted ones lie in the WINDOW before it; if not, the next moment is the earliest end of a counted one's window
    at which fewer than ALLOWED remain."""
    counted: list[datetime.datetime] = []
    fates = []
    for at in times:
        if in_window(counted, at) < ALLOWED:
            counted.append(at)
            fates.append(Fate(at, True, None))
        else:
            fates.append(Fate(at, False, min(end for end in (e + WINDOW for e in counted)
                                                 if end > at and in_window(counted, end) < ALLOWED)))
    return fates


def minute_up(at: datetime.datetime) -> str:
    """The first whole minute at or after `at`, as the student reads it (a minute earlier would still not count)."""
    return f"{datetime.datetime.fromtimestamp(math.ceil(at.timestamp() / 60) * 60, at.tzinfo):%Y-%m-%d %H:%M %z}"


def uploads(members, folders: dict[str, pathlib.Path], scores: dict[str, float], out: pathlib.Path):
    """The weeks' uploads: name -> (the zip python -m student.submit writes, the member's step-1 score). low, mid
    and high: the lowest-, a middle- and the highest-scoring bug below 100; right: a correct member."""
    bugs: dict[float, str] = {}   # score -> the first bug (by name) that scored it
    for member in sorted(members, key=lambda m: m.student):
        if member.kind == "bug" and scores[member.student] < 100:
            bugs.setdefault(scores[member.student], member.student)
    levels = sorted(bugs)
    correct = min(m.student for m in members if m.part is None and scores[m.student] == 100)
    chosen = {"low": bugs[levels[0]], "mid": bugs[levels[len(levels) // 2]], "high": bugs[levels[-1]],
              "right": correct}
    made = {}
    for name, student in chosen.items():
        copy = out / "folders" / student   # a copy: submitting writes bytecode, and step 1's folder stays as graded
        shutil.copytree(folders[student], copy)
        made[name] = (submit(copy, out / f"{name}.zip"), scores[student])
    return made, chosen


def seen(results: dict) -> dict:
    """What a student reads, less the time it took and the budget's counted marker."""
    extra = {k: v for k, v in (results.get("extra_data") or {}).items() if k != course_policies.COUNTED}
    if "gradebook_row" in extra:
        extra["gradebook_row"] = {k: v for k, v in extra["gradebook_row"].items() if k not in MEASURED}
    return {**{k: v for k, v in results.items() if k != "execution_time"}, "extra_data": extra}


def check_student(name: str, runs, fates: list[Fate], week, made, problems: list[str]) -> int:
    """One student's week against the fates worked out from the times; returns how many uploads counted."""
    last_counted = None
    counted_at = []
    for (day, clock, upload), fate, run in zip(week, fates, runs, strict=True):
        where = f"budget: {name}'s upload of {upload} on day {day} at {clock}"
        if run.results is None or run.returncode != 0:
            problems.append(f"{where}: run_autograder exit {run.returncode}, no results")
            continue
        results = run.results
        counts = (results.get("extra_data") or {}).get(course_policies.COUNTED)
        if counts is not fate.counts:
            problems.append(f"{where}: counted {counts}, expected {fate.counts}")
        if counts:
            counted_at.append(fate.at)
            last_counted = results["score"]
            if results["score"] != made[upload][1] or not results["tests"]:
                problems.append(f"{where}: counted with score {results['score']} and {len(results['tests'])} tests; "
                                f"the same member scored {made[upload][1]} in grades.csv")
        else:
            if results["score"] != (last_counted or 0.0) or results["tests"]:
                problems.append(f"{where}: not counted, score {results['score']} with {len(results['tests'])} tests; "
                                f"the last counted one scored {last_counted}")
            if fate.next_at is not None and minute_up(fate.next_at) not in results["output"]:
                problems.append(f"{where}: its words do not name {minute_up(fate.next_at)}: {results['output']!r}")
    crowded = [at for at in counted_at if in_window(counted_at, at) > ALLOWED]
    problems += [f"budget: {name} had more than {ALLOWED} counted in the 24 hours up to {at}" for at in crowded]
    return len(counted_at)


def week(members, folders: dict[str, pathlib.Path], scores: dict[str, float], work: pathlib.Path) -> list[str]:
    """Play the weeks and check them; prints the step's time and summary, returns its problems."""
    start = time.monotonic()
    problems: list[str] = []
    budgeted = packaging.build_autograder_zip(work / "budget.zip", {"allowed_submissions": ALLOWED,
                                                                   "submission_window_hours": WINDOW_HOURS})
    made, chosen = uploads(members, folders, scores, work / "uploads")
    total = counted = 0
    reopened = 0
    for name, week_of in WEEKS.items():
        times = [moment(day, clock) for day, clock, _ in week_of]
        fates = expected(times)
        announced = {f.next_at for f in fates if f.next_at is not None}
        reopened += sum(f.at in announced for f in fates)
        plays = [(made[upload][0], at.isoformat(timespec="microseconds")) for (_, _, upload), at in
                 zip(week_of, times, strict=True)]
        runs = harness.play(budgeted, plays, work / "plays" / name)
        counted += check_student(name, runs, fates, week_of, made, problems)
        total += len(runs)
        if name == WITHIN:
            if not all(f.counts for f in fates):
                problems.append(f"budget: the {WITHIN} student's week goes over the budget")
            free = packaging.build_autograder_zip(work / "free.zip")
            for (_, _, upload), with_budget, without in zip(week_of, runs, harness.play(free, plays, work / "free"),
                                                              strict=True):
                if with_budget.results is None or without.results is None or (
                        seen(with_budget.results) != seen(without.results)):
                    problems.append(f"budget: the {WITHIN} student's upload of {upload} reads differently under "
                                    f"the budget than without it")
    if not reopened:
        problems.append("budget: no upload in the weeks falls on the moment a slot reopens")
    print(f"2c. a week of resubmissions under {ALLOWED} in any {WINDOW_HOURS:g} h, through "
          f"Gradescope's harness: {time.monotonic() - start:.0f} s; {len(WEEKS)} students, {total} uploads of "
          f"{', '.join(f'{k} ({chosen[k]}, {made[k][1]:g})' for k in made)}: {counted} counted, {total - counted} "
          f"not, {reopened} at the moment a slot reopened; {len(problems)} disagreements")
    return problems

