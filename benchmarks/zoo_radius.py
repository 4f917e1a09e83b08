"""What every bug of the zoo costs, by part, written into docs/testing.md: `python -m autograder zoo-report`'s
summary and its table by part.

    python benchmarks/zoo_radius.py [--write-docs]

Grades every bug of autograder/zoo/bugs.py through the engine of a fresh build, as the self-check does
(autograder/zoo_report.py), and prints the summary and the table by part; --write-docs writes them into
docs/testing.md's block "zoo-radius" (benchmarks/figures.py). Exits 1 where the report finds a problem.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from autograder import selfcheck, zoo_report  # noqa: E402
from benchmarks import figures  # noqa: E402

DOCUMENT, BLOCK = "docs/testing.md", "zoo-radius"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    figures.add_option(parser, DOCUMENT, BLOCK)
    parser.add_argument("--workers", type=int, default=2, help="submissions graded at once (default 2)")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    chosen = [case for case in selfcheck.trials() if case.kind == "bug"]
    with tempfile.TemporaryDirectory(prefix="zoo-radius-") as scratch:
        found, missing = zoo_report.graded(chosen, pathlib.Path(scratch), args.workers)
    text = zoo_report.summary(found) + "\n\n" + zoo_report.by_part(found)
    print(text)
    if args.write_docs:
        print(f"wrote {figures.write(DOCUMENT, BLOCK, text, load)}")
    return 0 if found and not missing and all(r.ok for r in found) else 1


if __name__ == "__main__":
    sys.exit(main())
