"""The output folder: results/<slug>.json per submission, grades.csv, the closing table (the class reports are
autograder/reports/'s, made from this folder afterwards).

grades.csv is meant to go back into a roster (Gradescope's and the usual LMS gradebook imports read
it): UTF-8, one header row, plain numbers in the score columns, one line per student. Its columns are Row's
fields (grader/row.py); docs/graders.md says what each holds.

Every file is written to a temporary name and moved into place (os.replace), so a run
killed half way leaves only complete files; a result file present means "graded". A result
belongs to its submission's source (a digest of the folder or zip's real path), never just to its file
name, so a resumed run can never give one submission's row to another. Text from submissions
is made safe here for the CSV and the terminal (sanitize.py).
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import pathlib
import re
import statistics
import unicodedata

from assignment.spec import SPEC
from grader.policies import late
from grader.row import Row, RowError, columns, lines, of_results
from grader.run.files import atomic_write
from grader.run.outcome import Outcome
from grader.run.recorded import hours_late
from grader.run.submissions import identity_of_earlier
from grader.sanitize import csv_cell, printable, valid_text
from grader.scoring import PART_POINTS, STATUSES, error_results

MAX_ATTEMPTS = 2    # an engine failure is graded again by the next run, once; then its error row stays


def identity(submission) -> dict:
    """Who a row is for (Row's fields): the submission's name, Gradescope's submission id and its students, and
    what Gradescope recorded of it: its score, and the hours it came after the due date (from an export;
    recorded.py)."""
    record = submission.recorded
    return {"submission": submission.name, "submission_id": submission.submission_id,
            "submitters": list(submission.submitters),
            "gradescope_score": None if record is None else record.score, "late": hours_late(record)}


def with_identity(row: Row, submission) -> Row:
    """A row kept from an earlier run, with who it is for read again (an export's metadata may have changed), and
    its grade under the late policy in force now."""
    return late.on_row(dataclasses.replace(row, **identity(submission)), SPEC.settings)


def row_from_outcome(submission, outcome: Outcome, isolation_note: str, attempts: int = 1, *,
                     content: str | None = None, graded_with: str | None = None, environment: str = "",
                     again: str = "") -> Row:
    """One gradebook row, complete (also stored in the results file's extra_data, so a resumed run can rebuild the
    csv): content and graded_with, the digests of what was graded and with what (changes.py); again, why it was
    graded again, which leads its message."""
    parts = outcome.part_scores
    return late.on_row(Row(
        **identity(submission), score=round(float(outcome.score), 4),
        max_score=float(outcome.max_score or sum(PART_POINTS.values())),
        status=outcome.status, message=printable("; ".join(filter(None, [again, outcome.message])), limit=500),
        parts={p: float(parts.get(str(p), 0.0)) for p in PART_POINTS},
        isolation=isolation_note, flags="; ".join(printable(flag, limit=300) for flag in outcome.flags),
        peak_memory_mib=round(outcome.peak_memory_bytes / 2**20, 1) if outcome.peak_memory_bytes else None,
        slug=submission.slug, source=submission.source, seconds=outcome.seconds,
        engine_failure=outcome.engine_failure, attempts=attempts,
        content=content, graded_with=graded_with, environment=environment,
    ), SPEC.settings)


def results_document(outcome: Outcome, row: Row) -> dict:
    """The Gradescope results.json of one submission (score, tests, output, visibility) plus extra_data."""
    document = outcome.results
    if document is None:   # never reached the suite: zero points, the reason as feedback
        document = error_results(row.status, row.message,
                                 extra_output="\n".join(f"Flagged: {flag}" for flag in outcome.flags))
    document["execution_time"] = round(outcome.seconds, 2)
    document["extra_data"] = {"gradebook_row": row.to_json(),
                              "flags": [printable(flag, limit=300) for flag in outcome.flags]}
    return document


def write_result(out: pathlib.Path, row: Row, document: dict) -> None:
    atomic_write(out / "results" / f"{row.slug}.json", json.dumps(valid_text(document), indent=1))


def read_row(path: pathlib.Path) -> Row:
    """The row a results file carries; RowError where it is unreadable or carries none."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise RowError(f"{path.name}: {type(error).__name__}") from None
    row = of_results(document)
    if row is None:
        raise RowError(f"{path.name} carries no gradebook row")
    return row


def load_done(out: pathlib.Path) -> tuple[dict[str, Row], dict[str, str]]:
    """(source -> row of every submission already graded in this output folder, slug -> source of every
    results file there).

    A row the engine itself failed on (engine_failure) does not count as done, until it has failed
    MAX_ATTEMPTS times: then its error row stays, rather than failing again on every run.
    """
    done, taken = {}, {}
    for path in sorted((out / "results").glob("*.json")):
        try:
            row = read_row(path)
        except RowError:
            continue   # not one of ours, from an older engine, or damaged: grade again
        if row.slug != path.stem:
            continue
        row = dataclasses.replace(row, source=identity_of_earlier(row.source))
        taken[row.slug] = row.source
        if not row.engine_failure or row.attempts >= MAX_ATTEMPTS:
            done[row.source] = row
    return done, taken


def attempts_before(out: pathlib.Path, slug: str) -> int:
    """How often the engine already failed on this results file's submission."""
    try:
        row = read_row(out / "results" / f"{slug}.json")
    except RowError:
        return 0
    return row.attempts if row.engine_failure else 0


def write_csv(out: pathlib.Path, rows: list[Row]) -> None:
    """grades.csv: Row's columns (grader/row.py), text made safe for a spreadsheet."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns(), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in sorted(rows, key=lambda r: (r.submission.lower(), r.slug)):
        for line in lines(row):
            writer.writerow({key: csv_cell(value) if isinstance(value, str) else value for key, value in line.items()})
    atomic_write(out / "grades.csv", buffer.getvalue())


def table(rows: list[Row], limit: int = 20, most_failed=()) -> str:
    """A short closing table: status counts, score statistics, mean per part, flags, the tests the most submissions
    failed (most_failed: reports.analytics.TestStat), then the rows: every error and timeout first, then by name."""
    if not rows:
        return "no submissions"
    scores = [r.score for r in rows]
    counts = ", ".join(f"{sum(r.status == s for r in rows)} {s}" for s in STATUSES)
    flagged = [r for r in rows if r.flags]
    lines = [f"{len(rows)} submissions: {counts}",
             f"score: mean {statistics.mean(scores):.1f}, median {statistics.median(scores):.1f}, "
             f"min {min(scores):g}, max {max(scores):g}",
             "part means: " + "  ".join(f"{p}:{statistics.mean(r.part(p) for r in rows):.1f}/{PART_POINTS[p]}"
                                        for p in PART_POINTS),
             f"flags: {len(flagged)} submission(s) flagged for a look (the flags column of grades.csv)"
             + (": " + ", ".join(printable(r.submission, limit=40) for r in flagged[:5]) if flagged else "")
             + (" ..." if len(flagged) > 5 else "")]
    if most_failed:
        lines.append("most failed tests (tests.csv, tests.png):")
        lines += [f"  Part {s.part} {shorten(printable(s.test), 60):<60} failed by {s.failed} of {s.graded}"
                  for s in most_failed]
    lines.append("")
    names = {id(r): printable(r.submission) for r in rows}
    width = max(len("submission"), min(NAME_WIDTH, max(display_width(name) for name in names.values())))
    lines.append(f"{fit('submission', width)}  {'score':>8}  {'status':<8}  message")
    for row in sorted(rows, key=lambda r: (r.status == "graded", r.submission.lower()))[:limit]:
        lines.append(f"{fit(names[id(row)], width)}  {row.score:>8.2f}  {row.status:<8}  "
                     f"{shorten(printable(row.message), MESSAGE_WIDTH)}".rstrip())
    if len(rows) > limit:
        lines.append(f"... {len(rows) - limit} more in grades.csv")
    return "\n".join(lines)


NAME_WIDTH = 32      # columns of the closing table's submission names
MESSAGE_WIDTH = 72   # and of its messages
# Where an error happened, as Python and the engine write it: "(masking.py, line 12)", "masking.py:12",
# "masking.py line 12".
LOCATION = re.compile(r"\(?[\w./-]+\.py(?:, line \d+|:\d+| line \d+)\)?")


def display_width(text: str) -> int:
    """Terminal columns: wide (East Asian) characters take two, combining marks none."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def fit(text: str, width: int) -> str:
    """text cut to `width` terminal columns (an ellipsis marks the cut) and padded to exactly that width."""
    if display_width(text) > width:
        while display_width(text) > width - 1:
            text = text[:-1]
        text += "…"
    return text + " " * (width - display_width(text))


def shorten(message: str, width: int) -> str:
    """message within `width` characters, keeping where the error happened (its last file and line) when the
    middle has to go."""
    if len(message) <= width:
        return message
    places = list(LOCATION.finditer(message))
    if not places or len(places[-1].group()) > width // 2:
        return message[:width - 1] + "…"
    place = places[-1]
    tail = message[place.start():]
    tail = tail if len(tail) <= width // 2 else place.group()
    return message[:width - len(tail) - 2] + "… " + tail
