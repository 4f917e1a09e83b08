"""python -m autograder grade PATH... --out DIR [--workers N] [--timeout S] [--budget S] [--memory-gb G] [--keep DIR]
                                                [--force NAME] [--regrade] [--repeat N] [--due TIME] [--private PATH]
                                                [--no-similarity] [--no-exports] [--shard I/N]

Grades submissions (folders or zips holding student/, folders of them, or a Gradescope
export named itself: its folder or its zip) with the hidden suite, each in its
own sandbox, into DIR: grades.csv (one row per student), results/<submission>.json (Gradescope
schema), then the class reports for the instructor: summary.png, tests.csv and tests.png (what the class got
wrong, per hidden test), similarity.csv and similarity.html (pairs of submissions whose code is alike: a flag
for a human, never points) and, for an export, gradescope.csv (every score that differs from Gradescope's).
Run it again with the same --out to finish an interrupted run; a submission changed since it was
graded is graded again. --regrade grades everything again after a change of the suite or the limits,
keeping the earlier results in DIR/earlier/ and listing what changed in changes.csv. The limits
default to the spec's settings (assignment/assignment.toml).

The grading is the runtime's batch command (grader/run/command.py, what Gradescope's run calls); the
reports are made afterwards, from the output folder (autograder/reports/). Its exit status and its shards (for a
class larger than one machine) are this command's too.
"""
from __future__ import annotations

import os
import sys
import tempfile

from autograder import exports
from grader.run import command


def parser():
    p = command.parser("python -m autograder grade", __doc__)
    p.add_argument("--no-similarity", dest="similarity_report", action="store_false",
                   help="write no similarity report (a run whose class report nobody reads, as the self-check's)")
    return p


def main(argv=None, started: tuple[int, int] | None = None) -> int:
    """started: the template, where python -m autograder started it first of all."""
    # An export zip is extracted here, not in the batch's own folder: the reports read its submissions after it.
    with tempfile.TemporaryDirectory(prefix="autograder-exports-", ignore_cleanup_errors=True) as staging:
        return _grade(argv, started, staging)


def _grade(argv, started: tuple[int, int] | None, staging: str) -> int:
    code, run, args = command.grade(argv, parser(), exports.read_metadata, started, staging)
    if run is None:
        return code
    if run.shard:   # the reports are of the whole class: the run without --shard makes them
        return command.main_output(run, args.out, code)
    from autograder import reports
    from autograder.reports import analytics
    from grader.run import gradebook

    written = reports.write(args.out, run, similarity=args.similarity_report)
    print(gradebook.table(run.rows, most_failed=analytics.most_failed(written.tests)))
    for line in command.closing_lines(run, args.out, *report_lines(run, written, args.out)):
        print(line)
    return code


def report_lines(run, written, out: str) -> tuple[list[str], str]:
    """(the reports' lines asking for the grader's attention, the files they wrote, for the line that lists them)."""
    from autograder.reports import recorded_scores
    where = os.path.join
    scored = any(map(recorded_scores.scored, run.rows))   # an export with Gradescope's scores
    lines = [f"similarity: {written.similarity_stopped}"] if written.similarity_stopped else [] \
        if written.flagged is None else [
        f"similarity: {written.flagged} pair(s) of submissions to look at ({where(out, 'similarity.html')}, "
        f"similarity.csv); a flag for a human, never points"]
    if written.not_compared:
        lines.append(f"error: similarity: {len(written.not_compared)} graded submission(s) could not be read for the "
                     f"comparison, so were compared with nobody: {command.some(written.not_compared)}")
    if scored:
        lines.append(f"gradescope: {len(written.disagreements)} submission(s) scored differently from the score "
                     f"Gradescope recorded ({where(out, 'gradescope.csv')})")
    wrote = (", tests.csv" + (", summary.png, tests.png" if written.charts else
                              " (no pictures for a gradebook of one row)")
             + (", similarity.csv, similarity.html" if written.flagged is not None else "")
             + (", gradescope.csv" if scored else ""))
    return lines, wrote


if __name__ == "__main__":
    sys.exit(main())
