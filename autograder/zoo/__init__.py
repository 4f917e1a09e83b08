"""Sample submissions that prove the hidden suite: realistic bugs (bugs.py) and correct variants (variants.py).

Used by the project tests (tests/test_grading_suite.py) and by `python -m autograder selfcheck`.

Each sample is the reference with one small edit (autograder.samples.edited_reference raises when
an edit does not apply, so a sample can never silently turn into the reference).
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


def edit(name: str, part: int | None, module: str, old: str, new: str, why: str = "") -> Sample:
    return Sample(name, part, edited_reference(module, old, new), why)
