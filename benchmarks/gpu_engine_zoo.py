"""The engine itself on a GPU machine: the zoo and the adversarial zoo graded as a course would grade them.

    python benchmarks/gpu_engine_zoo.py [--out DIR] [--workers N] [--quick] [--gpu]

Grades the reference, every correct variant and every bug of autograder/zoo in one batch with the runtime's
command (every isolation layer the machine allows), then the adversarial zoo in a second batch, and prints one
line per case: the self-check's verdict (a correct submission exactly 100, a bug losing points in its own part)
and what became of the CUDA tests (test_part6_cuda.py).

Without --gpu the sandboxes reach no GPU (no GPU device file is opened inside): the placement checks use the
emulated device and the CUDA tests are reported as not run, worth nothing, never failed; a CUDA test that ran is
a problem. With --gpu (`python -m grader --gpu`) each submission's sandboxes get a GPU of their own and the CUDA
tests run in them: a submission whose CUDA tests did not run is a problem, and so is a correct one that fails
any. Exit 1 on any problem, or when an adversarial submission got what it must not.
benchmarks/gpu_check.sh runs this after grading the CUDA tests in-process (python -m pytest --submission DIR).
"""
from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from autograder import selfcheck
from grader.gradescope import engine_bridge
from grader.paths import REPO
from grader.scoring import NOT_RUN_TITLE

CUDA_TESTS = "test_cuda_"


def cuda_counts(results: dict | None) -> collections.Counter:
    """How the CUDA tests of one result went: passed / failed, or named in the "not run" entry."""
    counts = collections.Counter()
    for test in (results or {}).get("tests", []):
        if CUDA_TESTS in test.get("name", ""):
            counts[test.get("status", "?")] += 1
        elif test.get("name") == NOT_RUN_TITLE and "GPU" in test.get("output", ""):
            counts["not run: no GPU in the sandbox"] += 1
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=None)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="one bug per part and one variant")
    parser.add_argument("--gpu", action="store_true", help="grade with the sandboxes on the GPUs (python -m grader "
                                                           "--gpu): the CUDA tests must run in them")
    args = parser.parse_args(argv)
    out = args.out or pathlib.Path(tempfile.mkdtemp(prefix="gpu-engine-zoo-"))
    cases = selfcheck.trials(quick=args.quick)
    selfcheck.write_trials(cases, out / "submissions")
    start = time.monotonic()
    options = ("--gpu",) if args.gpu else ()
    engine_bridge.run_engine([out / "submissions"], out / "grades", REPO, workers=args.workers,
                             timeout=engine_bridge.GRADE_TIMEOUT_S + 60 * len(cases), options=options)
    took = time.monotonic() - start
    results = selfcheck.read_results(out / "grades")
    problems = []
    for case in cases:
        verdict = selfcheck.judge(case, results.get(case.name))
        counts = cuda_counts(results.get(case.name))
        print(f"{'ok ' if verdict.ok else 'BAD'} {case.name:48} {verdict.got[:90]:90} cuda {dict(counts)}")
        if not verdict.ok:
            problems.append(f"{case.name}: expected {verdict.expected}, got {verdict.got[:200]}")
        if args.gpu and not (counts["passed"] or counts["failed"]):
            problems.append(f"{case.name}: no CUDA test ran in the sandboxes of a GPU run")
        elif not args.gpu and (counts["passed"] or counts["failed"]):
            problems.append(f"{case.name}: CUDA tests ran through the engine, whose sandbox reaches no GPU")
    print(f"== {len(cases)} submissions graded in {took:.0f} s with {args.workers} workers "
          f"({took / len(cases) * args.workers:.1f} s per submission per worker)")
    for verdict in selfcheck.adversarial_verdicts(out, args.workers, options):
        print(f"{'ok ' if verdict.ok else 'BAD'} {verdict.name:48} {verdict.got[:120]}")
        if not verdict.ok:
            problems.append(f"{verdict.name}: {verdict.got[:200]}")
    print(f"grades: {out / 'grades'}; adversarial: {out / 'adversarial-grades'}")
    for problem in problems:
        print("PROBLEM:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
