"""The course's policies on Gradescope, from ROOT/submission_metadata.json: the submission budget (decided before
grading) and the late policy (applied after, where late_on_gradescope asks for it). The decisions are
grader/policies/'s; this module reads the metadata and writes them into the results.json Gradescope reads.

    metadata(root)                          -> the submission's metadata ({} where there is none)
    allowance(metadata, settings)           -> budget.Budget of this submission (from previous_submissions)
    not_counted(allowance, seconds, shown)  -> the results.json of a submission past the budget
    applied(shown, metadata, settings)      -> the results.json of one that counts, with the late policy applied

Each results.json says in extra_data whether its submission counted ("counted"): the next submission's
previous_submissions carry it back, so one past the budget never counts against a later one. A previous
submission that does not say (graded before the budget was set) counted. Within the budget and on time, what
students read is exactly what it would be without either policy (with neither set, results.json is too).
"""
from __future__ import annotations

import dataclasses
import json
import pathlib

from grader.policies import budget, late
from grader.policies.times import hours_after, when
from grader.row import of_results

COUNTED = "counted"   # the key of extra_data that says whether the submission counted against the budget


def metadata(root: pathlib.Path) -> dict:
    try:
        found = json.loads((root / "submission_metadata.json").read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _number(value) -> float:
    try:
        return float(value) if not isinstance(value, bool) else 0.0
    except (TypeError, ValueError):
        return 0.0


def _mapping(value) -> dict:
    return value if isinstance(value, dict) else {}


def earlier(data: dict) -> list[budget.Earlier]:
    """The student's previous submissions, as the budget counts them."""
    found = []
    for previous in data.get("previous_submissions") or []:
        if not isinstance(previous, dict):
            continue
        results = _mapping(previous.get("results"))
        found.append(budget.Earlier(when(previous.get("submission_time")), _number(previous.get("score")),
                                    _mapping(results.get("extra_data")).get(COUNTED) is not False))
    return found


def allowance(data: dict, settings) -> budget.Budget:
    return budget.decide(when(data.get("created_at")), earlier(data), settings)


def not_counted(decision: budget.Budget, seconds: float, shown: dict | None = None) -> dict:
    """A submission past the budget: the score of the last one that counted, the budget's words at once, nothing
    of the hidden tests. shown: its graded results (over_budget = "grade_hidden"), kept for the instructor alone."""
    tests = [{**test, "visibility": "hidden"} for test in (shown or {}).get("tests", [])]
    extra = {**((shown or {}).get("extra_data") or {}), COUNTED: False}
    return {"score": decision.kept_score or 0.0, "execution_time": round(seconds, 2), "output": decision.words,
            "visibility": "visible", "stdout_visibility": "hidden", "tests": tests, "extra_data": extra}


def _dates(data: dict, key: str):
    """The assignment's date `key` for this submission: the latest its students have (an extension is per
    student; a group gets the most lenient), else the assignment's own."""
    own = [when((user.get("assignment") or {}).get(key)) for user in data.get("users") or []
           if isinstance(user, dict) and isinstance(user.get("assignment"), dict)]
    dated = [moment for moment in own if moment is not None]
    return max(dated) if dated else when(_mapping(data.get("assignment")).get(key))


def lateness(data: dict) -> tuple[float | None, bool]:
    """(hours after the due date, or None where a date is unknown; whether it came after the late due date)."""
    created, due, last = when(data.get("created_at")), _dates(data, "due_date"), _dates(data, "late_due_date")
    hours = hours_after(created, due)
    return hours, hours is not None and last is not None and created > last


def applied(shown: dict, data: dict, settings) -> dict:
    """A submission that counts: marked so, and, where the course asks for it, the late policy applied to the score
    the student sees (and to the row the instructor's batch reads back), with what it deducted said at once."""
    if settings.allowed_submissions is not None:
        shown = {**shown, "extra_data": {**(shown.get("extra_data") or {}), COUNTED: True}}
    if not settings.late_on_gradescope:
        return shown
    hours, closed = lateness(data)
    decision = late.decide(hours, shown["score"], settings, closed)   # on the shown score (scaled to points_possible)
    row = of_results(shown)
    if row is not None:
        graded = late.on_row(dataclasses.replace(row, late=hours), settings, closed)
        shown = {**shown, "extra_data": {**shown["extra_data"], "gradebook_row": graded.to_json()}}
    if not decision.percent:
        return shown
    return {**shown, "score": decision.grade, "output": f"{shown.get('output', '')} {decision.words}".strip()}
