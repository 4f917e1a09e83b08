"""Gradescope's timestamps, read once for the export's metadata (grader/run/recorded.py) and the runtime's
submission_metadata.json (grader/gradescope/course_policies.py).

    when(value) -> an aware datetime, or None
    hours_after(moment, due) -> hours from due to moment, to the hundredth (0.0 when on time; None when either is
                                unknown)
"""
from __future__ import annotations

import datetime
import re

# "2026-11-20 10:00:00.000000000 -08:00" (as Gradescope writes it), "2026-11-20T10:00:00Z", "... +0000"
TIMESTAMP = re.compile(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d(?::\d\d)?)(?:\.(\d+))?\s*(Z|[+-]\d\d:?\d\d)?")


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


def hours_after(moment: datetime.datetime | None, due: datetime.datetime | None) -> float | None:
    if moment is None or due is None:
        return None
    return round(max(0.0, (moment - due).total_seconds() / 3600), 2)
