"""The output folder: results/<slug>.json per submission, grades.csv, summary.png, the closing table.

Every file is written to a temporary name and moved into place (os.replace), so a run
killed half way leaves only complete files; a result file present means "graded". A result
belongs to its submission's source (the folder or zip, by real path), never just to its file
name, so a resumed run can never give one submission's row to another. Text from submissions
is made safe here for the CSV and the terminal (sanitize.py).
"""
from __future__ import annotations

import csv
import io
import json
import os
import pathlib
import statistics
import tempfile
import threading

from autograder.engine.files import atomic_write
from autograder.engine.outcome import Outcome
from autograder.engine.sanitize import csv_cell, printable
from grading_tests.scoring import PART_POINTS, PART_TITLES, error_results

STATUSES = ("graded", "error", "timeout")
MAX_ATTEMPTS = 2    # an engine failure is graded again by the next run, once; then its error row stays


def row_from_outcome(submission, outcome: Outcome, isolation_note: str, attempts: int = 1) -> dict:
    """One gradebook row (also stored in the results file's extra_data, so a resumed run can rebuild the csv)."""
    parts = outcome.part_scores
    return {
        "submission": submission.name, "score": round(float(outcome.score), 4),
        "max_score": float(outcome.max_score or sum(PART_POINTS.values())),
        "status": outcome.status, "message": printable(outcome.message, limit=500),
        **{f"part{p}": float(parts.get(str(p), 0.0)) for p in PART_POINTS},
        "isolation": isolation_note, "flags": "; ".join(printable(flag, limit=300) for flag in outcome.flags),
        "slug": submission.slug, "source": submission.source, "seconds": outcome.seconds,
        "engine_failure": outcome.engine_failure, "attempts": attempts,
    }


def results_document(outcome: Outcome, row: dict) -> dict:
    """The Gradescope results.json of one submission (score, tests, output, visibility) plus extra_data."""
    document = outcome.results
    if document is None:   # never reached the suite: zero points, the reason as feedback
        document = error_results(row["status"], row["message"],
                                 extra_output="\n".join(f"Flagged: {flag}" for flag in outcome.flags))
    document["execution_time"] = round(outcome.seconds, 2)
    document["extra_data"] = {"gradebook_row": row}
    return document


def write_result(out: pathlib.Path, row: dict, document: dict) -> None:
    atomic_write(out / "results" / f"{row['slug']}.json", json.dumps(document, indent=1))


def load_done(out: pathlib.Path) -> tuple[dict[str, dict], dict[str, str]]:
    """(source -> row of every submission already graded in this output folder, slug -> source of every
    results file there).

    A row the engine itself failed on (engine_failure) does not count as done, until it has failed
    MAX_ATTEMPTS times: then its error row stays, rather than failing again on every run.
    """
    done, taken = {}, {}
    for path in sorted((out / "results").glob("*.json")):
        try:
            row = json.loads(path.read_text())["extra_data"]["gradebook_row"]
            source, slug = row["source"], row["slug"]
        except (ValueError, KeyError, TypeError):
            continue   # not one of ours, from an older engine, or damaged: grade again
        if slug != path.stem:
            continue
        taken[slug] = source
        if not row.get("engine_failure") or row.get("attempts", 1) >= MAX_ATTEMPTS:
            done[source] = row
    return done, taken


def attempts_before(out: pathlib.Path, slug: str) -> int:
    """How often the engine already failed on this results file's submission."""
    try:
        row = json.loads((out / "results" / f"{slug}.json").read_text())["extra_data"]["gradebook_row"]
        return int(row.get("attempts", 1)) if row.get("engine_failure") else 0
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def columns() -> list[str]:
    return ["submission", "score", "max_score", "status", "message", *[f"part{p}" for p in PART_POINTS],
            "isolation", "flags"]


TEXT_COLUMNS = ("submission", "message", "isolation", "flags")


def write_csv(out: pathlib.Path, rows: list[dict]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns(), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in sorted(rows, key=lambda r: (r["submission"].lower(), r["slug"])):
        writer.writerow({**row, **{key: csv_cell(str(row.get(key, ""))) for key in TEXT_COLUMNS}})
    atomic_write(out / "grades.csv", buffer.getvalue())


_plotting: threading.Thread | None = None


def preload_plotting() -> None:
    """Import matplotlib in the background while grading runs (the batch process only waits meanwhile).
    Call after the batch's last fork."""
    global _plotting
    if not os.access(os.path.expanduser("~"), os.W_OK):   # a grader without a home (nobody): no cache warning
        os.environ.setdefault("MPLCONFIGDIR", tempfile.mkdtemp(prefix="autograder-matplotlib-"))

    def load():
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot

    _plotting = threading.Thread(target=load, daemon=True)
    _plotting.start()


def write_summary_png(out: pathlib.Path, rows: list[dict]) -> None:
    if _plotting is not None:
        _plotting.join()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    graded = [r for r in rows if r["status"] != "error"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.hist([r["score"] for r in rows], bins=range(0, 105, 5), color="#4C72B0", edgecolor="white")
    left.set(title=f"Scores ({len(rows)} submissions, {len(rows) - len(graded)} errors)", xlabel="score",
             ylabel="submissions")
    rates = [100 * sum(r[f"part{p}"] >= PART_POINTS[p] - 1e-6 for r in graded) / max(1, len(graded))
             for p in PART_POINTS]
    labels = [f"{p}. {PART_TITLES[p]}" for p in PART_POINTS]
    right.barh(labels[::-1], rates[::-1], color="#55A868")
    right.set(title="Full marks per part (% of graded submissions)", xlim=(0, 100))
    figure.tight_layout()
    temporary = out / f".summary.png.tmp-{os.getpid()}.png"
    figure.savefig(temporary, dpi=100)
    plt.close(figure)
    os.replace(temporary, out / "summary.png")


def table(rows: list[dict], limit: int = 20) -> str:
    """A short closing table: status counts, score statistics, mean per part, flags, the first rows."""
    if not rows:
        return "no submissions"
    scores = [r["score"] for r in rows]
    counts = ", ".join(f"{sum(r['status'] == s for r in rows)} {s}" for s in STATUSES)
    flagged = [r for r in rows if r.get("flags")]
    lines = [f"{len(rows)} submissions: {counts}",
             f"score: mean {statistics.mean(scores):.1f}, median {statistics.median(scores):.1f}, "
             f"min {min(scores):g}, max {max(scores):g}",
             "part means: " + "  ".join(f"{p}:{statistics.mean(r[f'part{p}'] for r in rows):.1f}/{PART_POINTS[p]}"
                                        for p in PART_POINTS),
             f"flags: {len(flagged)} submission(s) flagged for a look (the flags column of grades.csv)"
             + (": " + ", ".join(printable(r["submission"], limit=40) for r in flagged[:5]) if flagged else "")
             + (" ..." if len(flagged) > 5 else ""), ""]
    names = {id(r): printable(r["submission"]) for r in rows}
    width = min(40, max(len(name) for name in names.values()))
    lines.append(f"{'submission':<{width}}  {'score':>6}  {'status':<8}  message")
    for row in sorted(rows, key=lambda r: r["submission"].lower())[:limit]:
        lines.append(f"{names[id(row)][:width]:<{width}}  {row['score']:>6g}  {row['status']:<8}  "
                     f"{printable(row['message'])[:60]}")
    if len(rows) > limit:
        lines.append(f"... {len(rows) - limit} more in grades.csv")
    return "\n".join(lines)
