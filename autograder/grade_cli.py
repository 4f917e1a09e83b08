"""python -m autograder grade PATH... --out DIR [--workers N] [--timeout S] [--budget S] [--memory-gb G] [--keep DIR]

Grades submissions (folders or zips holding student/, folders of them, or a Gradescope
export: its folder, its zip, or the folder holding either) with the hidden suite, each in its
own sandbox, into DIR: grades.csv (one row per student), results/<submission>.json (Gradescope
schema) and summary.png. Run it again with the same --out to finish an interrupted run. The limits
default to the spec's settings (assignment/assignment.toml).

Exit status: 0 when at least one submission was graded; 1 when every row is an error (nothing
could be graded: most likely the wrong folder was given); 2 for a missing path or an export zip
that cannot be read; 130 when interrupted.
"""
from __future__ import annotations

import argparse
import os
import sys

from autograder.engine.limits import Limits


def parser() -> argparse.ArgumentParser:
    defaults = Limits()
    p = argparse.ArgumentParser(prog="python -m autograder grade", description="\n\n".join(__doc__.split("\n\n")[1:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="a submission (folder or .zip), a folder of them, or a Gradescope export (folder or .zip)")
    p.add_argument("--out", required=True, help="output folder (created; reused to resume)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                   help="submissions graded at once (default: the core count)")
    p.add_argument("--timeout", type=float, default=defaults.call_timeout,
                   help=f"CPU seconds one call into student code may take (default {defaults.call_timeout:g}); "
                        f"{defaults.wall_factor:g} times that of wall-clock time")
    p.add_argument("--budget", type=float, default=defaults.budget,
                   help=f"CPU seconds of student code per submission (default {defaults.budget:g})")
    p.add_argument("--memory-gb", type=float, default=defaults.memory_bytes / 2**30,
                   help=f"memory of a sandbox in GiB, all its processes together where the memory layer holds, "
                        f"else the address space of each (default {defaults.memory_bytes / 2**30:g})")
    p.add_argument("--keep", metavar="DIR", default=None,
                   help="keep, per submission, its trusted-side pytest log and its sandboxes' output in DIR/<name>/ "
                        "(a grader error row names the file)")
    p.add_argument("--force", metavar="NAME", action="append", default=[],
                   help="grade this submission again although out/ has its result (repeatable; its name in "
                        "grades.csv, or its results file's name). A submission whose content changed since it "
                        "was graded is graded again without being asked, and its row says so")
    p.add_argument("--private", metavar="PATH", action="append", default=[],
                   help="a file or folder of the grader's that no sandbox may read (repeatable): closed to other "
                        "users when sandboxes have their own user id, and named in the isolation line if a sandbox "
                        "could still read it (Gradescope's runner passes /autograder/submission_metadata.json)")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.workers < 1 or args.timeout <= 0 or args.budget <= 0 or args.memory_gb <= 0:
        print("grade: --workers, --timeout, --budget and --memory-gb must be positive", file=sys.stderr)
        return 2
    limits = Limits(call_timeout=args.timeout, budget=args.budget, memory_bytes=int(args.memory_gb * 2**30))
    from autograder.engine import analytics, batch, gradebook, submissions
    try:
        rows, note, tests = batch.grade_all(args.paths, args.out, workers=args.workers, limits=limits, keep=args.keep,
                                     private=args.private, force=args.force)
    except (FileNotFoundError, KeyError) as error:
        print(f"grade: {error.args[0] if isinstance(error, KeyError) else error}", file=sys.stderr)
        return 2
    except submissions.SubmissionError as error:
        print(f"grade: cannot read the export: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\ngrade: interrupted; what was graded is kept in {args.out}: run the same command again to finish",
              file=sys.stderr)
        return 130
    print(gradebook.table(rows, most_failed=analytics.most_failed(tests)))
    print(f"\nisolation: {note}")
    print(f"wrote {os.path.join(args.out, 'grades.csv')}, {os.path.join(args.out, 'results')}/, "
          f"{os.path.join(args.out, 'summary.png')}, {os.path.join(args.out, 'tests.csv')} and tests.png")
    if rows and all(row["status"] == "error" for row in rows):
        print(f"grade: none of the {len(rows)} submission(s) could be graded (every row is an error): was the "
              f"right folder given? Each PATH must be a submission holding student/, a folder of them, or a "
              f"Gradescope export", file=sys.stderr)
        return 1
    return 0
