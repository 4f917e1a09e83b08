"""How long the class's similarity report takes: python benchmarks/bench_similarity.py [--size 500]

Builds a generated class (autograder/cohort: the zoo, the independent hands, disguised copies up to --size)
and times similarity.write on it (unpacking every submission, fingerprinting, comparing every pair, writing
similarity.csv and .html), as the batch command runs it after grading. The zoo's samples are all edits of one
reference, so most pairs here are near-copies: the slow case (a pair that shares nothing costs one set
intersection; a near-copy costs copydetect's full comparison).
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from autograder import cohort
from autograder.engine import similarity, submissions


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=500)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        folder = pathlib.Path(work) / "class"
        size = 0
        while size < args.size:   # cohort.build makes at most one copy of each sample: add rounds until large enough
            size += len(cohort.build(folder / f"round{size}", size=min(args.size - size, 250), seed=size))
        found = submissions.discover(sorted(folder.iterdir()))
        start = time.monotonic()
        pairs = similarity.write(pathlib.Path(work), found)
        seconds = time.monotonic() - start
    comparisons = len(found) * (len(found) - 1) // 2
    print(f"{len(found)} submissions, {comparisons} pairs compared, {len(pairs)} flagged: {seconds:.1f} s "
          f"({1e3 * seconds / comparisons:.2f} ms a pair)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
