"""The course's late policy (the late_* settings of assignment/spec.py), as one decision.

    decide(hours, score, settings, closed=False) -> Late: the percent deducted, the score after it, and why
    on_row(row, settings, closed=False) -> the gradebook row with its late_penalty and grade decided so

The deduction is a percent of the score (10% of 80 is 8), counted from the end of the grace period in started
hours or days, never above late_cap. It is always computed from the raw score, so a regrade or a changed policy
recomputes it and never compounds it. Unknown lateness (no date) costs nothing.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

UNIT_HOURS = {"per_hour": 1.0, "per_day": 24.0}
EPSILON_HOURS = 1e-6   # lateness is rounded to hundredths of an hour: 24.0 late is one day, not two


@dataclass(frozen=True)
class Late:
    percent: float     # of the score deducted (0: nothing)
    grade: float       # the score after the deduction
    words: str         # why, for the student and the gradebook ("" when nothing is deducted)


def percent(hours: float | None, settings, closed: bool = False) -> float:
    """The percent a submission `hours` after the due date loses; closed: it came after the last date the course
    accepts (Gradescope's late_due_date), which costs late_cap."""
    policy = settings.late_policy
    if policy == "none" or hours is None:
        return 0.0
    if closed:
        return settings.late_cap
    late = hours - settings.late_grace_hours
    if late <= EPSILON_HOURS:
        return 0.0
    if policy == "late_days":
        return 0.0 if late <= settings.late_days * 24 + EPSILON_HOURS else settings.late_cap
    started = math.ceil(late / UNIT_HOURS[policy] - EPSILON_HOURS)
    return min(settings.late_cap, started * settings.late_deduction)


def rule(settings) -> str:
    """The policy in words."""
    grace = f" after a grace of {settings.late_grace_hours:g} hours" if settings.late_grace_hours else ""
    if settings.late_policy == "late_days":
        return f"{settings.late_days:g} late days{grace}, then {settings.late_cap:g}%"
    unit = "hour" if settings.late_policy == "per_hour" else "day"
    return f"{settings.late_deduction:g}% per started {unit} late{grace}, at most {settings.late_cap:g}%"


def decide(hours: float | None, score: float, settings, closed: bool = False) -> Late:
    deducted = percent(hours, settings, closed)
    grade = round(score * (1 - deducted / 100), 4)
    if not deducted:
        return Late(0.0, grade, "")
    when = "after the last date for late submissions" if closed else "after the due date"
    return Late(deducted, grade, f"Submitted {hours:g} hours {when}: {deducted:g}% of the score deducted "
                                 f"({rule(settings)}): {score:g} -> {grade:g}.")


def on_row(row, settings, closed: bool = False):
    """A gradebook row (grader/row.py's Row) with late_penalty and grade decided from its raw score and its late
    hours: the one place a row's grade is derived, by the batch's gradebook and by the Gradescope runtime alike."""
    decision = decide(row.late, row.score, settings, closed)
    return dataclasses.replace(row, late_penalty=decision.percent, grade=decision.grade)
