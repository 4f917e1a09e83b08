"""How long the class's similarity report takes: python benchmarks/bench_similarity.py [--size 100 200 400 800]
[--write-docs]

Builds a generated class of each size (tests/cohort: the zoo, the independent hands, disguised copies) and
times similarity.write on it (unpacking every submission, fingerprinting, comparing every pair, writing
similarity.csv and .html), as the batch command runs it after grading. The zoo's samples are all edits of one
reference, so most pairs here are near-copies: the slow case.

Printed side by side: wall and CPU seconds (of the whole process tree: this process and the workers it forks),
ms of CPU a pair, and the ratio to the comparison before it was vectorised (copydetect's compare_files on every pair:
BEFORE_CPU_S at 400 submissions, growing as n^BEFORE_EXPONENT; other sizes scaled by that growth), then the
fitted growth exponent (the log-log slope of CPU seconds against n) over the sizes measured, the exponent of the
last doubling (where the growth is steepest: the flagged pairs, which here are most pairs, grow as n^2), and what a
class of PROJECTED submissions would cost, extrapolated from the largest size at that steepest exponent. The
default sizes span what courses meet (100 to 800: 800 takes about 75 CPU-s). The load average is printed with them:
the figures are only comparable on an idle machine. --write-docs writes the table into docs/graders.md's block
"similarity" (benchmarks/figures.py).
"""
from __future__ import annotations

import argparse
import math
import os
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import figures  # beside this file
from cpu_accounting import own_and_children_seconds  # beside this file: its pool's workers are waited-for children

from autograder.reports import similarity
from grader.run import submissions
from tests import cohort

SIZES = (100, 200, 400, 800)
PROJECTED = 2000   # a large course: what its report costs, extrapolated
DOCUMENT, BLOCK = "docs/graders.md", "similarity"
# Measured before the comparison was vectorised (compare_files on every pair): 205 CPU-s at 400, 2.57 ms a pair, n^2.05.
BEFORE_N, BEFORE_CPU_S, BEFORE_EXPONENT = 400, 205.0, 2.05


def generated_class(folder: pathlib.Path, size: int) -> list:
    """A class of `size` submissions (cohort.build makes at most one copy of each sample: rounds are added)."""
    made = 0
    while made < size:
        made += len(cohort.build(folder / f"round{made}", size=min(size - made, 250), seed=made))
    return submissions.discover(sorted(folder.iterdir()))


def measure(size: int) -> dict:
    with tempfile.TemporaryDirectory() as work:
        found = generated_class(pathlib.Path(work) / "class", size)
        wall, cpu = time.monotonic(), own_and_children_seconds()
        flagged = len(similarity.write(pathlib.Path(work), found).pairs)
        wall, cpu = time.monotonic() - wall, own_and_children_seconds() - cpu
    n = len(found)
    return {"n": n, "pairs": n * (n - 1) // 2, "flagged": flagged, "wall": wall, "cpu": cpu}


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def before_cpu(n: int) -> float:
    return BEFORE_CPU_S * (n / BEFORE_N) ** BEFORE_EXPONENT


def slope(rows: list[dict]) -> float:
    """The least-squares slope of log(CPU seconds) against log(n)."""
    xs, ys = [math.log(r["n"]) for r in rows], [math.log(r["cpu"]) for r in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def growth(rows: list[dict]) -> str:
    """The fitted growth, the last doubling's, and the cost of a class of PROJECTED, in words."""
    (small, large), overall = rows[-2:], slope(rows)
    last = slope(rows[-2:])
    projected = large["cpu"] * (PROJECTED / large["n"]) ** last
    return (f"CPU grows as n^{overall:.2f} from {rows[0]['n']} to {large['n']} (least squares), n^{last:.2f} from "
            f"{small['n']} to {large['n']}; a class of {PROJECTED:,} at that steeper rate: about "
            f"{projected:,.0f} CPU-s ({projected / 60:.0f} CPU-min)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, nargs="+", default=list(SIZES), help="class sizes (default: %(default)s)")
    figures.add_option(parser, DOCUMENT, BLOCK)
    args = parser.parse_args(argv)
    began = os.getloadavg()
    import copydetect  # noqa: F401 - imported once before timing, as a batch imports it once for the class
    workers = similarity._workers(max(args.size))
    print(f"similarity.write on a generated class; {workers} worker process(es) from {similarity.PARALLEL_FROM} "
          f"submissions, {os.cpu_count()} cores; load average before: {load()}")
    print(f"{'submissions':>11} {'pairs':>7} {'flagged':>7} {'wall s':>7} {'CPU s':>7} {'ms/pair':>7} "
          f"{'before CPU s':>12} {'before ms/pair':>14} {'x less CPU':>10}")
    rows = []
    for size in args.size:
        row = measure(size)
        rows.append(row)
        before = before_cpu(row["n"])
        print(f"{row['n']:>11} {row['pairs']:>7} {row['flagged']:>7} {row['wall']:>7.1f} {row['cpu']:>7.1f} "
              f"{1e3 * row['cpu'] / row['pairs']:>7.3f} {before:>12.1f} {1e3 * before / row['pairs']:>14.2f} "
              f"{before / row['cpu']:>10.1f}", flush=True)
    if len(rows) > 1:
        print(f"growth: {growth(rows)} (before: n^{BEFORE_EXPONENT})")
    before_ms = 1e3 * BEFORE_CPU_S / (BEFORE_N * (BEFORE_N - 1) / 2)
    print(f"before: {BEFORE_CPU_S:.0f} CPU-s at {BEFORE_N} ({before_ms:.2f} ms a pair), other sizes scaled by "
          f"n^{BEFORE_EXPONENT}; load average after: {load()}")
    if args.write_docs:
        print(f"wrote {figures.write(DOCUMENT, BLOCK, docs_table(rows), began)}")
    return 0


def docs_table(rows: list[dict]) -> str:
    """This run's figures as docs/graders.md shows them."""
    lines = ["| submissions | pairs | flagged | wall | CPU | per pair | before | less CPU |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        before = before_cpu(row["n"])
        lines.append(f"| {row['n']} | {row['pairs']:,} | {row['flagged']:,} | {row['wall']:.1f} s | {row['cpu']:.1f} s "
                     f"| {1e3 * row['cpu'] / row['pairs']:.2f} ms | {before:.1f} s | {before / row['cpu']:.1f}x |")
    if len(rows) > 1:
        lines += ["", f"{growth(rows)} (n^{BEFORE_EXPONENT} before, when copydetect compared every "
                  f"pair on one core). \"Before\" is {BEFORE_CPU_S:.0f} CPU-s for {BEFORE_N} measured on the "
                  f"earlier code, scaled by n^{BEFORE_EXPONENT} for the other sizes. CPU seconds of the process and "
                  "its workers."]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
