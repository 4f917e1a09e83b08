"""The hidden suite's adequacy in full: every mutant of the reference's graded code (mutmut's operators), every
generated adversary (computes nothing: must score at most 3) and every generated correct style (must score 100),
graded by this checkout's engine in one batch (autograder/adequacy/report.py). A few minutes on 2 cores; .ci/run
runs a sample of it (tests/test_adequacy.py, --sample 12).

    python benchmarks/adequacy.py [--workers N] [--out DIR] [--write-docs]

Prints the figures and the table of survivors, with the reason each is spared (autograder/adequacy/
equivalent.py); --write-docs writes the figures into docs/testing.md's block "adequacy" (benchmarks/figures.py).
Exits 1 where anything is not as it must be; OUT/adequacy.json keeps every verdict.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from autograder.adequacy import report  # noqa: E402
from benchmarks import figures  # noqa: E402

DOCUMENT, BLOCK = "docs/testing.md", "adequacy"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    figures.add_option(parser, DOCUMENT, BLOCK)
    parser.add_argument("--workers", type=int, default=2, help="submissions graded at once (default 2)")
    parser.add_argument("--out", type=pathlib.Path, default=report.DEFAULT_OUT,
                        help=f"working folder, emptied first (default: {report.DEFAULT_OUT.relative_to(REPO)})")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    measured = report.run(args.out, workers=args.workers)
    print(measured.shown())
    summary = (f"{measured.figures}\n\nThe full run: {measured.graded} submissions graded in {measured.seconds:.0f} s "
               f"on {args.workers} workers.")
    if args.write_docs and not measured.problems:
        print(f"wrote {figures.write(DOCUMENT, BLOCK, summary, load)}")
    return 1 if measured.problems else 0


if __name__ == "__main__":
    sys.exit(main())
