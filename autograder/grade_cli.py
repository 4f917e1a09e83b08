"""python -m autograder grade PATH... --out DIR [--workers N] [--timeout S] [--budget S] [--memory-gb G]

Grades submissions (folders or zips holding student/, folders of them, or a Gradescope
export) with the hidden suite, each in its own sandbox, into DIR: grades.csv,
results/<submission>.json (Gradescope schema) and summary.png. Run it again with the
same --out to finish an interrupted run.
"""
from __future__ import annotations

import argparse
import os
import sys

from autograder.engine.limits import Limits


def parser() -> argparse.ArgumentParser:
    defaults = Limits()
    p = argparse.ArgumentParser(prog="python -m autograder grade", description=__doc__.split("\n\n")[1])
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="a submission (folder or .zip), a folder of them, or a Gradescope export")
    p.add_argument("--out", required=True, help="output folder (created; reused to resume)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                   help="submissions graded at once (default: the core count)")
    p.add_argument("--timeout", type=float, default=defaults.call_timeout,
                   help=f"CPU seconds one call into student code may take (default {defaults.call_timeout:g}); "
                        f"{defaults.wall_factor:g} times that of wall-clock time")
    p.add_argument("--budget", type=float, default=defaults.budget,
                   help=f"CPU seconds of student code per submission (default {defaults.budget:g})")
    p.add_argument("--memory-gb", type=float, default=defaults.memory_bytes / 2**30,
                   help=f"address-space limit of a sandbox in GiB (default {defaults.memory_bytes / 2**30:g})")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.workers < 1 or args.timeout <= 0 or args.budget <= 0 or args.memory_gb <= 0:
        print("grade: --workers, --timeout, --budget and --memory-gb must be positive", file=sys.stderr)
        return 2
    limits = Limits(call_timeout=args.timeout, budget=args.budget, memory_bytes=int(args.memory_gb * 2**30))
    from autograder.engine import batch, gradebook
    try:
        rows, note = batch.grade_all(args.paths, args.out, workers=args.workers, limits=limits)
    except FileNotFoundError as error:
        print(f"grade: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\ngrade: interrupted; what was graded is kept in {args.out}: run the same command again to finish",
              file=sys.stderr)
        return 130
    print(gradebook.table(rows))
    print(f"\nisolation: {note}")
    print(f"wrote {os.path.join(args.out, 'grades.csv')}, {os.path.join(args.out, 'results')}/, "
          f"{os.path.join(args.out, 'summary.png')}")
    return 0
