"""What Gradescope recorded about a submission, read from its export's metadata: the score it gave, when the
submission was made and, where the export says, its due date (the comparison of the scores is a class report:
autograder/reports/recorded_scores.py).

    recorded(entry, due)        -> Recorded (from one submission's entry of submission_metadata.yml)
    hours_late(recorded)        -> hours after the due date (0.0 when on time; None when a date is unknown)

An export names each submission's time (:created_at:) and score (:score:). Its due date is taken from the entry
(:due_date:, or :assignment: -> :due_date:) where Gradescope wrote one, else from the grader's --due; no late
policy is applied: the hours are reported, the score is not touched.
"""
from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

# "2026-11-20 10:00:00.000000000 -08:00" (as Gradescope writes it), "2026-11-20T10:00:00Z", "... +0000"
TIMESTAMP = re.compile(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d(?::\d\d)?)(?:\.(\d+))?\s*(Z|[+-]\d\d:?\d\d)?")


@dataclass(frozen=True)
class Recorded:
    score: float | None = None
    submitted_at: datetime.datetime | None = None
    due_at: datetime.datetime | None = None


def when(value) -> datetime.datetime | None:
    """A timestamp as YAML gives it (a datetime) or as text ("2026-11-20 10:00:00.000000000 -08:00", ISO 8601);
    None when it cannot be read or has no time zone (an hour count would be a guess)."""
    if isinstance(value, datetime.datetime):
        moment = value
    elif isinstance(value, str) and (match := TIMESTAMP.fullmatch(value.strip())):
        date, time, fraction, zone = match.groups()
        fraction = f".{fraction[:6]}" if fraction else ""   # Gradescope writes nanoseconds; Python reads micro
        try:
            moment = datetime.datetime.fromisoformat(f"{date}T{time}{fraction}{zone or ''}")
        except ValueError:
            return None
    else:
        return None
    return moment if moment.tzinfo is not None else None


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
    if record is None or record.submitted_at is None or record.due_at is None:
        return None
    return round(max(0.0, (record.submitted_at - record.due_at).total_seconds() / 3600), 2)
