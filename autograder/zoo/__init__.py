"""Sample submissions that prove the hidden suite: realistic bugs (bugs.py) and correct variants (variants.py).

Used by the project tests (tests/test_grading_suite.py) and by `python -m autograder selfcheck`.

Each sample is the reference with one small edit. An edit that no longer applies (the reference changed
under it) never turns the sample silently into the reference: the sample keeps the reason in `stale`,
and the self-check names it (autograder/consistency.py) instead of grading it.
"""
from __future__ import annotations

from dataclasses import dataclass

from autograder.samples import edited_reference


@dataclass(frozen=True)
class Sample:
    name: str
    part: int | None        # the part the bug lives in; None for a correct variant
    overrides: dict         # file name inside student/ -> full text
    why: str = ""
    stale: str = ""         # why its edit no longer applies to the reference ("": it does)


def edit(name: str, part: int | None, module: str, old: str, new: str, why: str = "") -> Sample:
    return sample(name, part, lambda: edited_reference(module, old, new), why)


def sample(name: str, part: int | None, make, why: str = "") -> Sample:
    """A sample whose overrides make() computes from the reference; a ValueError it raises marks it stale."""
    try:
        return Sample(name, part, make(), why)
    except ValueError as error:
        return Sample(name, part, {}, why, stale=str(error))


def fresh(samples: list[Sample]) -> list[Sample]:
    """The samples whose edits still apply."""
    return [s for s in samples if not s.stale]
