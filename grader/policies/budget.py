"""The course's submission budget (allowed_submissions in any submission_window_hours), as one decision.

    decide(now, earlier, settings) -> Budget: whether this submission counts, what it keeps if not, and the words

A submission counts when fewer than allowed_submissions of the earlier ones counted in the window before it
(a rolling window, as Otter's RateLimiting counts). One that does not keeps the score of the last one that
counted, so going over the budget never lowers a grade, and shows nothing of the hidden tests. An earlier
submission with no time cannot be placed in a window and is not counted against the student.
"""
from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Earlier:
    at: datetime.datetime | None   # when it was submitted
    score: float
    counted: bool                  # it was within the budget of its own time (its results said so)


@dataclass(frozen=True)
class Budget:
    counts: bool                          # graded and shown as usual
    kept_score: float | None = None       # does not count: the score it keeps (the last counted one's)
    next_at: datetime.datetime | None = None   # does not count: the first whole minute a submission counts again
    words: str = ""                       # does not count: what the student reads at once


def decide(now: datetime.datetime | None, earlier: Sequence[Earlier], settings) -> Budget:
    allowed = settings.allowed_submissions
    if allowed is None or now is None:
        return Budget(True)
    window = datetime.timedelta(hours=settings.submission_window_hours)
    counted = [(e.at, e.score) for e in earlier if e.counted and e.at is not None and e.at <= now]   # (when, score)
    inside = sorted(at for at, _score in counted if now - window < at)
    if len(inside) < allowed:
        return Budget(True)
    kept = max(counted, key=lambda pair: pair[0])[1] if counted else 0.0
    reopens = inside[len(inside) - allowed] + window
    # The words name whole minutes: the first one at or after the slot reopens (Gradescope's times carry seconds,
    # and a minute shown truncated would still be refused).
    whole = reopens.replace(second=0, microsecond=0)
    next_at = (whole if whole == reopens else whole + datetime.timedelta(minutes=1)).astimezone(now.tzinfo)
    return Budget(False, kept, next_at, (
        f"This submission does not count: {allowed} submission{'s' if allowed != 1 else ''} count in any "
        f"{settings.submission_window_hours:g} hours, and you have none left until {next_at:%Y-%m-%d %H:%M %z}. "
        f"It keeps the score of your last submission that counted, {kept:g}, and shows nothing of the hidden "
        f"tests. From then on, a submission counts again."))
