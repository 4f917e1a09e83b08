"""The handout's benchmark (handout/bench.py) on the reference solution, as a student runs it once Parts 5 and 6 pass.

    python benchmarks/bench_handout.py [--write-docs] [BENCH ARGS ...]

Writes the reference submission into a temporary folder with the handout's bench.py beside it, runs
`python bench.py --no-plot` there (any further arguments are passed on), and prints its report. --write-docs
writes the report's table and its growth lines into docs/students.md's block "handout-bench" (benchmarks/figures.py);
bench.py itself marks timings it could not trust and says when the machine was busy.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from autograder.samples import write_submission  # noqa: E402
from benchmarks import figures  # noqa: E402

DOCUMENT, BLOCK = "docs/students.md", "handout-bench"


def run_bench(extra: list[str]) -> str:
    with tempfile.TemporaryDirectory(prefix="bench-handout-") as scratch:
        folder = write_submission(pathlib.Path(scratch) / "reference")
        shutil.copy(REPO / "handout" / "bench.py", folder / "bench.py")
        proc = subprocess.run([sys.executable, "bench.py", "--no-plot", *extra], cwd=folder, capture_output=True,
                              text=True)
    if proc.returncode != 0:
        raise SystemExit(f"bench.py failed (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")
    return proc.stdout


def report_for_docs(report: str) -> str:
    """The report up to its notes: its set-up line, the table, then the legend and growth lines as a list (markdown
    would run them together)."""
    lines = report.split("\nNotes:")[0].strip("\n").splitlines()
    return "\n".join(line if not line.strip() or line.startswith("|") or number == 0 else f"- {line}"
                     for number, line in enumerate(lines))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    figures.add_option(parser, DOCUMENT, BLOCK)
    args, extra = parser.parse_known_args(argv)
    load = os.getloadavg()
    report = run_bench(extra)
    print(report)
    if args.write_docs:
        print(f"wrote {figures.write(DOCUMENT, BLOCK, report_for_docs(report), load)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
