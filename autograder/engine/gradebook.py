"""The output folder: results/<slug>.json per submission, grades.csv, summary.png, the closing table.

Every file is written to a temporary name and moved into place (os.replace), so a run
killed half way leaves only complete files; a result file present means "graded".
"""
from __future__ import annotations

import csv
import io
import json
import os
import pathlib
import statistics

from grading_tests.scoring import PART_POINTS, PART_TITLES, gradescope_results, score_outcomes

STATUSES = ("graded", "error", "timeout")


def atomic_write(path: pathlib.Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def row_from_outcome(submission, outcome: dict, isolation_note: str) -> dict:
    """One gradebook row (also stored in the results file's extra_data, so a resumed run can rebuild the csv)."""
    parts = outcome.get("part_scores") or {}
    return {
        "submission": submission.name, "score": round(float(outcome.get("score") or 0.0), 4),
        "max_score": float(outcome.get("max_score") or sum(PART_POINTS.values())),
        "status": outcome["status"], "message": outcome.get("message", ""),
        **{f"part{p}": float(parts.get(str(p), 0.0)) for p in PART_POINTS},
        "isolation": isolation_note, "slug": submission.slug, "seconds": outcome.get("seconds", 0.0),
        "engine_failure": bool(outcome.get("engine_failure")),
    }


def results_document(outcome: dict, row: dict) -> dict:
    """The Gradescope results.json of one submission (score, tests, output, visibility) plus extra_data."""
    document = outcome.get("results")
    if document is None:   # never reached the suite: zero points, the reason as feedback
        document = gradescope_results(score_outcomes([]), extra_output=f"{row['status']}: {row['message']}")
        document["score"] = 0.0
    document["extra_data"] = {"gradebook_row": row}
    return document


def write_result(out: pathlib.Path, row: dict, document: dict) -> None:
    atomic_write(out / "results" / f"{row['slug']}.json", json.dumps(document, indent=1))


def load_done(out: pathlib.Path) -> dict[str, dict]:
    """slug -> row of every submission already graded in this output folder.

    A row the engine itself failed on (engine_failure) does not count: the next run grades it again.
    """
    done = {}
    for path in sorted((out / "results").glob("*.json")):
        try:
            row = json.loads(path.read_text())["extra_data"]["gradebook_row"]
        except (ValueError, KeyError, TypeError):
            continue   # not one of ours or damaged: grade again
        if not row.get("engine_failure"):
            done[row["slug"]] = row
    return done


def columns() -> list[str]:
    return ["submission", "score", "max_score", "status", "message", *[f"part{p}" for p in PART_POINTS], "isolation"]


def write_csv(out: pathlib.Path, rows: list[dict]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns(), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in sorted(rows, key=lambda r: r["submission"].lower()):
        writer.writerow(row)
    atomic_write(out / "grades.csv", buffer.getvalue())


def write_summary_png(out: pathlib.Path, rows: list[dict]) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    graded = [r for r in rows if r["status"] != "error"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.hist([r["score"] for r in rows], bins=range(0, 105, 5), color="#4C72B0", edgecolor="white")
    left.set(title=f"Scores ({len(rows)} submissions, {len(rows) - len(graded)} errors)", xlabel="score", ylabel="submissions")
    rates = [100 * sum(r[f"part{p}"] >= PART_POINTS[p] - 1e-6 for r in graded) / max(1, len(graded)) for p in PART_POINTS]
    labels = [f"{p}. {PART_TITLES[p]}" for p in PART_POINTS]
    right.barh(labels[::-1], rates[::-1], color="#55A868")
    right.set(title="Full marks per part (% of graded submissions)", xlim=(0, 100))
    figure.tight_layout()
    temporary = out / f".summary.png.tmp-{os.getpid()}.png"
    figure.savefig(temporary, dpi=100)
    plt.close(figure)
    os.replace(temporary, out / "summary.png")


def table(rows: list[dict], limit: int = 20) -> str:
    """A short closing table: status counts, score statistics, mean per part, the first rows."""
    if not rows:
        return "no submissions"
    scores = [r["score"] for r in rows]
    counts = ", ".join(f"{sum(r['status'] == s for r in rows)} {s}" for s in STATUSES)
    lines = [f"{len(rows)} submissions: {counts}",
             f"score: mean {statistics.mean(scores):.1f}, median {statistics.median(scores):.1f}, "
             f"min {min(scores):g}, max {max(scores):g}",
             "part means: " + "  ".join(f"{p}:{statistics.mean(r[f'part{p}'] for r in rows):.1f}/{PART_POINTS[p]}"
                                        for p in PART_POINTS), ""]
    width = min(40, max(len(r["submission"]) for r in rows))
    lines.append(f"{'submission':<{width}}  {'score':>6}  {'status':<8}  message")
    for row in sorted(rows, key=lambda r: r["submission"].lower())[:limit]:
        lines.append(f"{row['submission'][:width]:<{width}}  {row['score']:>6g}  {row['status']:<8}  {row['message'][:60]}")
    if len(rows) > limit:
        lines.append(f"... {len(rows) - limit} more in grades.csv")
    return "\n".join(lines)
