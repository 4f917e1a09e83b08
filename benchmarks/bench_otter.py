"""Build time, autograder.zip size, and the time to grade one submission through `otter run` vs the
batch command (`python -m autograder grade`), side by side in one run.

    python benchmarks/bench_otter.py [--repeat 3] [--submission reference|stubs]

Every number is the wall-clock time of the command a person would type (process start included);
the grading times are medians over --repeat runs, taken alternately so both see the same machine load.
"""
from __future__ import annotations

import argparse
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from autograder.samples import write_submission  # noqa: E402


def timed(command: list[str], cwd: pathlib.Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-2000:]}")
    return seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="gradings per command (default 3)")
    parser.add_argument("--submission", choices=("reference", "stubs"), default="reference")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="bench-otter-") as scratch:
        scratch = pathlib.Path(scratch)
        build_s = timed([python, "-m", "autograder", "build", "--out", str(scratch / "dist")], REPO)
        autograder = scratch / "dist" / "autograder.zip"
        size_kib = autograder.stat().st_size / 1024
        folder = write_submission(scratch / args.submission, solution=args.submission == "reference")
        submission = scratch / f"{args.submission}.zip"
        timed([python, "-m", "student.submit", "--no-checks", "--out", str(submission)], folder)

        otter_s, batch_s = [], []
        for run in range(args.repeat):
            out = scratch / f"otter-{run}"
            out.mkdir()
            otter_s.append(timed([python, "-m", "otter", "run", "--no-logo", "-a", str(autograder), "-o", str(out),
                                  str(submission)], REPO))
            batch_s.append(timed([python, "-m", "autograder", "grade", str(submission), "--out",
                                  str(scratch / f"batch-{run}"), "--workers", "1"], REPO))

    otter, batch = statistics.median(otter_s), statistics.median(batch_s)
    print(f"build (python -m autograder build)   {build_s:6.1f} s")
    print(f"autograder.zip                        {size_kib:6.0f} KiB")
    print(f"grading one {args.submission} submission, median of {args.repeat}:")
    print(f"  {'otter run -a autograder.zip':<36}{otter:6.1f} s   (runs: {', '.join(f'{s:.1f}' for s in otter_s)})")
    print(f"  {'python -m autograder grade':<36}{batch:6.1f} s   (runs: {', '.join(f'{s:.1f}' for s in batch_s)})")
    print(f"  ratio otter run / batch             {otter / batch:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
