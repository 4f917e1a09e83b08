"""What Gradescope recorded about a submission, read from its export's metadata: the score it gave, when the
submission was made and, where the export says, its due date (the comparison of the scores is a class report:
autograder/reports/recorded_scores.py).

    recorded(entry, due)        -> Recorded (from one submission's entry of submission_metadata.yml)
    when(value)                 -> a Gradescope timestamp as a datetime (grader/policies/times.py)
    hours_late(recorded)        -> hours after the due date (0.0 when on time; None when a date is unknown)

An export names each submission's time (:created_at:) and score (:score:). Its due date is taken from the entry
(:due_date:, or :assignment: -> :due_date:) where Gradescope wrote one, else from the grader's --due. The hours
are reported here; what they cost is the course's late policy (grader/policies/late.py, in the gradebook).
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass

from grader.policies.times import hours_after, when  # Gradescope's timestamps, read where the policies read them too


@dataclass(frozen=True)
class Recorded:
    score: float | None = None
    submitted_at: datetime.datetime | None = None
    due_at: datetime.datetime | None = None


def _number(value) -> float | None:
    try:
        return float(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def recorded(entry: dict, field, due: datetime.datetime | None = None) -> Recorded:
    """From one submission's metadata entry; field(mapping, key) reads a key in either of Gradescope's
    spellings. `due`: the grader's due date, used where the entry names none."""
    assignment = field(entry, "assignment")
    due_at = when(field(entry, "due_date")) or when(field(assignment, "due_date")) or due
    return Recorded(_number(field(entry, "score")), when(field(entry, "created_at")), due_at)


def hours_late(record: Recorded | None) -> float | None:
    return None if record is None else hours_after(record.submitted_at, record.due_at)
