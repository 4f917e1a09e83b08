"""What `.ci/run` takes from a fresh clone: the figure docs/testing.md gives, measured rather than written by hand.

    python benchmarks/ci_time.py [--write-docs] [--keep]

Clones the repository's committed HEAD into a temporary folder, runs `.ci/run` there (the install, `ruff check .`,
`lint-imports`, `mypy`, then `python -m pytest -n 2`) and prints its wall time, the tests' own (pytest's summary
line) and their counts. It exits as `.ci/run` did: a failed run is reported, never written into the documents.
--write-docs writes the figures into docs/testing.md's block "ci" (benchmarks/figures.py). Run it on a quiet machine:
the suite fills both cores, and anything beside it lengthens it.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import figures

REPO = figures.REPO
DOCUMENT, BLOCK = "docs/testing.md", "ci"
SUMMARY = re.compile(r"^=+ (?P<counts>.*?) in (?P<seconds>[\d.]+)s(?: \([\d:]+\))? =+$", re.M)
STAGE = re.compile(r"^\[\.ci/run\] (?P<stage>\w+): (?P<seconds>\d+) s since the start$", re.M)   # .ci/run's stage()


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {round(seconds % 60):d} s"


def stages_before_tests(output: str) -> str:
    """What the stages before the tests took, from the times .ci/run prints as each ends ("" if it printed none)."""
    ended = {match["stage"]: int(match["seconds"]) for match in STAGE.finditer(output)}
    if not {"install", "lint", "compile"} <= set(ended):
        return ""
    lint, compile_after = ended["lint"] - ended["install"], ended["compile"] - ended["lint"]
    return (f"{ended['compile']} s: the install {ended['install']} s, the lint gates {lint} s (the bytecode compiled "
            f"beside them), then {compile_after} s more of the compile")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    figures.add_option(parser, DOCUMENT, BLOCK)
    parser.add_argument("--keep", action="store_true", help="keep the clone and its log")
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    folder = tempfile.mkdtemp(prefix="ci-time-")
    clone = os.path.join(folder, "repo")
    subprocess.run(["git", "clone", "-q", str(REPO), clone], check=True)
    load = os.getloadavg()
    started = time.monotonic()
    with open(os.path.join(folder, "ci.log"), "w") as log:
        proc = subprocess.run(["bash", ".ci/run"], cwd=clone, stdout=log, stderr=subprocess.STDOUT)
    took = time.monotonic() - started
    with open(os.path.join(folder, "ci.log")) as log:
        output = log.read()
    summary = SUMMARY.search(output)
    tests = f"{minutes(float(summary['seconds']))}: {summary['counts']}" if summary else "no pytest summary"
    print(output[-3000:])
    before_tests = stages_before_tests(output)
    if before_tests:
        print(f"ci_time: {before_tests}")
    print(f"ci_time: .ci/run from a fresh clone of {commit}: exit {proc.returncode} after {minutes(took)}; "
          f"tests {tests}")
    if args.keep:
        print(f"ci_time: kept {folder}")
    else:
        shutil.rmtree(folder, ignore_errors=True)
    if proc.returncode != 0:
        print("ci_time: .ci/run failed: nothing written", file=sys.stderr)
        return proc.returncode
    if args.write_docs:
        text = ("| `.ci/run` from a fresh clone | wall time |\n|---|---|\n"
                f"| all of it (install, `ruff check .`, `lint-imports`, `mypy`, the tests), commit {commit} | "
                f"{minutes(took)} |\n"
                f"| of it, before the tests | {before_tests or 'no stage times in the log'} |\n"
                f"| of it, `python -m pytest -n 2` | {tests} |")
        print(f"wrote {figures.write(DOCUMENT, BLOCK, text, load)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
