"""The class reports: made from a batch's output folder after the batch, on the instructor's machine, never
shipped to Gradescope (where every run is one submission and writes its results.json only).

    written = write(out, run, similarity=True)   # tests.csv/png, summary.png, similarity, gradescope.csv

- analytics.py: what the class got wrong, per hidden test (tests.csv, tests.png);
- summary.py: the score histogram and the full marks per part (summary.png), chart.py drawing both;
- similarity.py: who may have copied (similarity.csv, .html), in a bounded step of its own (bounded.py);
- recorded_scores.py: every score that differs from the one Gradescope recorded in an export (gradescope.csv).
"""
from __future__ import annotations

import pathlib
from dataclasses import dataclass, field

from autograder.reports import analytics, recorded_scores, summary
from grader.row import Row

# Rows a gradebook needs for its pictures (summary.png, tests.png): one submission's results file already says all
# they would, and drawing them took a twentieth of the time one submission's grading costs beyond torch's import.
CLASS_CHARTS_FROM = 2
PICTURES = ("summary.png", "tests.png")


@dataclass
class Written:
    """What the reports found, for the closing lines."""
    tests: list[analytics.TestStat]      # per hidden test: tests.csv
    charts: bool                         # summary.png and tests.png drawn (not for a gradebook of one row)
    flagged: int | None = None           # pairs flagged for a look: similarity.csv (None: no report written)
    similarity_stopped: str = ""         # why no similarity report was written, where one was asked for
    not_compared: list[str] = field(default_factory=list)   # graded, yet compared with nobody (could not be read)
    disagreements: list[Row] = field(default_factory=list)   # with Gradescope's scores: gradescope.csv


def write(out: pathlib.Path, run, similarity: bool = True) -> Written:
    """The class's files in out/ for a batch's run (batch.BatchRun: its rows, the submissions it found, their
    contents)."""
    out = pathlib.Path(out)
    rows = run.rows
    charts = len(rows) >= CLASS_CHARTS_FROM
    flagged, stopped, unread = _similarity(out, run.found, run.contents) if similarity else (None, "", [])
    graded = {row.source for row in rows if row.status != "error"}   # an error row's upload may well be unreadable
    written = Written(analytics.write(out, rows, picture=charts), charts, flagged, stopped,
                      [s.name for s in unread if s.source in graded], recorded_scores.write(out, rows))
    if charts:
        summary.write(out, rows)
    else:   # a picture left from an earlier run would show rows this gradebook no longer has
        for picture in PICTURES:
            (out / picture).unlink(missing_ok=True)
    return written


def _similarity(out: pathlib.Path, found, contents) -> tuple[int | None, str, list]:
    """(pairs flagged, "", the submissions that could not be read) or (None, why no report was written, []). One
    submission is compared with nobody: no step of its own, no import of the comparison's libraries."""
    from autograder.reports import bounded, similarity

    if len(found) < 2:
        report = similarity.write(out, found)
        flagged, unread = len(report.pairs), report.unread
    else:
        try:
            flagged, unread = similarity.write_bounded(out, found, contents)
        except bounded.Stopped as stopped:
            return None, f"the similarity report was not written: {stopped}", []
    return flagged, "", [found[index] for index in unread]
