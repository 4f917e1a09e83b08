"""gradescope.csv: every submission whose score differs from the one Gradescope recorded in its export.

    scored(row)            -> whether Gradescope recorded a score for the row's submission
    ours(row)              -> our score to compare with it: like with like (the grade, where Gradescope applied the
                              late policy too: late_on_gradescope; else the raw score)
    write(out, rows)       -> out/gradescope.csv; the rows that disagree
"""
from __future__ import annotations

import csv
import io
import pathlib

from assignment.spec import SPEC
from grader.row import Row
from grader.run.files import atomic_write
from grader.sanitize import csv_cell

SCORE_TOLERANCE = 0.005   # scores are written rounded to 4 places; Gradescope shows 2
COLUMNS = ("submission", "submission_id", "students", "gradescope_score", "score", "difference", "status")


def scored(row: Row) -> bool:
    """Whether Gradescope recorded a score for this row's submission."""
    return row.gradescope_score is not None


def ours(row: Row, settings=SPEC.settings) -> float:
    """Our score as Gradescope would have recorded it: after the late policy only where its runtime applies it."""
    return row.grade if settings.late_on_gradescope else row.score


def difference(row: Row, settings=SPEC.settings) -> float:
    """Our score less the one Gradescope recorded (a row it scored)."""
    return ours(row, settings) - (row.gradescope_score or 0.0)


def disagreements(rows: list[Row], settings=SPEC.settings) -> list[Row]:
    """Rows of submissions Gradescope scored, where its score and ours differ."""
    return [row for row in rows if scored(row) and abs(difference(row, settings)) > SCORE_TOLERANCE]


def student(who) -> str:
    """A student as a TA looks them up: "Ada Lovelace (0042)", the name and the sid (else the email)."""
    name, number = who.name or who.email or who.sid, who.sid or who.email
    return f"{name} ({number})" if number and number != name else name


def write(out: pathlib.Path, rows: list[Row], settings=SPEC.settings) -> list[Row]:
    """out/gradescope.csv: every submission whose score differs from the one Gradescope recorded. Returns them."""
    if not any(map(scored, rows)):
        return []   # not an export, or one without scores: nothing to compare
    found = sorted(disagreements(rows, settings), key=lambda r: (-abs(difference(r, settings)), r.submission.lower()))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in found:
        students = "; ".join(student(p) for p in row.submitters)
        writer.writerow([csv_cell(row.submission), row.submission_id, csv_cell(students), row.gradescope_score,
                         ours(row, settings), round(difference(row, settings), 4), row.status])
    atomic_write(out / "gradescope.csv", buffer.getvalue())
    return found
