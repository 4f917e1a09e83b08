"""summary.png: the histogram of the graded rows' scores and, per part, the share of full marks."""
from __future__ import annotations

import pathlib

from autograder.reports import chart
from grader.row import Row
from grader.scoring import PART_POINTS, PART_TITLES


def write(out: pathlib.Path, rows: list[Row]) -> None:
    """The histogram of the graded rows' scores: an error row (nothing could be graded) is not a zero."""
    graded = [r for r in rows if r.status != "error"]
    rates = [(f"{p}. {PART_TITLES[p]}",
              100 * sum(r.part(p) >= PART_POINTS[p] - 1e-6 for r in graded) / max(1, len(graded)))
             for p in PART_POINTS]
    errors = len(rows) - len(graded)
    title = f"Scores ({len(graded)} graded; {errors} error{'' if errors == 1 else 's'} not counted)"
    chart.write(out, "summary.png", chart.draw, [r.score for r in graded], title, rates, "Full marks per part")
