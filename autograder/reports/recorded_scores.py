"""gradescope.csv: every submission whose score differs from the one Gradescope recorded in its export.

    scored(row)            -> whether Gradescope recorded a score for the row's submission
    write(out, rows)       -> out/gradescope.csv; the rows that disagree
"""
from __future__ import annotations

import csv
import io
import pathlib

from grader.run.files import atomic_write
from grader.sanitize import csv_cell

SCORE_TOLERANCE = 0.005   # scores are written rounded to 4 places; Gradescope shows 2
COLUMNS = ("submission", "submission_id", "students", "gradescope_score", "score", "difference", "status")


def scored(row: dict) -> bool:
    """Whether Gradescope recorded a score for this row's submission."""
    return row.get("gradescope_score") not in (None, "")


def disagreements(rows: list[dict]) -> list[dict]:
    """Rows of submissions Gradescope scored, where its score and ours differ."""
    return [row for row in rows if scored(row) and abs(float(row["gradescope_score"]) - row["score"]) > SCORE_TOLERANCE]


def write(out: pathlib.Path, rows: list[dict]) -> list[dict]:
    """out/gradescope.csv: every submission whose score differs from the one Gradescope recorded. Returns them."""
    if not any(map(scored, rows)):
        return []   # not an export, or one without scores: nothing to compare
    found = sorted(disagreements(rows), key=lambda r: (-abs(float(r["gradescope_score"]) - r["score"]),
                                                       r["submission"].lower()))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in found:
        students = "; ".join(p["sid"] or p["email"] or p["name"] for p in row.get("submitters") or [])
        writer.writerow([csv_cell(row["submission"]), row.get("submission_id", ""), csv_cell(students),
                         float(row["gradescope_score"]), row["score"],
                         round(row["score"] - float(row["gradescope_score"]), 4), row["status"]])
    atomic_write(out / "gradescope.csv", buffer.getvalue())
    return found
