"""The grading engine's speed, side by side in one run:

  (a) grading one submission from a cold start (`python -m autograder grade ONE.zip`) against a bare
      `python -c "import torch"`: how much the engine costs on top of the import it cannot avoid;
  (b) grading N submissions with the engine (one batch, --workers = the core count) against
      `otter run -a AUTOGRADER_ZIP SUBMISSION.zip` once per submission, one after another.

    python benchmarks/bench_grading.py [--count 100] [--repeat 3] [--autograder dist/autograder.zip] [--no-otter]

The targets: (a) at most 1.5x the bare import (issue 28; 2.0x before), the median of the ratios of paired runs,
with the CPU seconds of each command's whole process tree beside it; (b) 100 submissions on 2 workers within
the 99.3 s the engine took before its kernel sandbox (issue 11; the same machine, CPU-only torch).

Submissions are zips of a student/ package as `python -m student.submit` writes them: the
reference, the stubs and the bug zoo in turn. Every time is the wall clock of the command a
person would type, process start included. When AUTOGRADER_ZIP is missing it is built with
`python -m autograder build`; if that fails, part (b) says so and only the engine is timed.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import figures  # noqa: E402 - beside this file
from cpu_accounting import CpuGroup, children_seconds  # noqa: E402 - beside this file

from autograder.samples import write_submission  # noqa: E402
from autograder.zoo.bugs import BUGS  # noqa: E402
from student.submit import write_submission_zip  # noqa: E402

PYTHON = sys.executable
TARGET_RATIO = 1.5           # (a): grading one submission / import torch (issue 28)
BARE = 'python -c "import torch"'   # (a)'s baseline command, as its lines label it
BEFORE_100_SECONDS = 99.3    # (b): 100 submissions, 2 workers, before the kernel sandbox (issue 11)


def timed(command: list, what: str) -> float:
    return timed_cpu(command, what)[0]


def timed_cpu(command: list, what: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of its whole process tree) of one run of command: counted by a cgroup of its
    own where one can be made, else by the children this process waited for (which misses the processes that
    outlive their parent)."""
    group = CpuGroup()
    with group or contextlib.nullcontext():
        start, cpu = time.perf_counter(), children_seconds()
        proc = subprocess.run([str(c) for c in command], cwd=REPO, capture_output=True, text=True,
                              preexec_fn=group.join if group else None)
        seconds = time.perf_counter() - start
        spent = group.seconds() if group else children_seconds() - cpu
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {proc.returncode}): {(proc.stdout + proc.stderr)[-1500:]}")
    return seconds, spent


def write_class(folder: pathlib.Path, count: int) -> list[pathlib.Path]:
    """count submission zips: the reference, the stubs, then one bug after another, round and round."""
    kinds = [("reference", {}), ("stubs", None)] + [(bug.name, bug.overrides) for bug in BUGS]
    zips = []
    for i in range(count):
        name, overrides = kinds[i % len(kinds)]
        source = write_submission(folder / "work" / f"{i:03d}-{name}", solution=overrides is not None,
                                  overrides=overrides or {})
        with contextlib.redirect_stdout(io.StringIO()):   # its note about the missing notebook
            zips.append(write_submission_zip(folder / "class" / f"{i:03d}-{name}.zip", source / "student"))
    return zips


def autograder_zip(path: pathlib.Path) -> tuple[pathlib.Path | None, str]:
    """(the Gradescope autograder zip, "") or (None, why it is not there)."""
    if path.exists():
        return path, ""
    proc = subprocess.run([PYTHON, "-m", "autograder", "build"], cwd=REPO, capture_output=True, text=True)
    if proc.returncode == 0 and path.exists():
        return path, ""
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    return None, f"`python -m autograder build` failed (exit {proc.returncode}): {lines[-1] if lines else 'no output'}"


@dataclass
class OneSubmission:
    """Part (a)'s figures: per command, the medians of its rounds and, against the bare import, of its ratios."""
    load: tuple[float, ...]                                       # the load average as the rounds began
    repeat: int
    timings: dict[str, tuple[float, float]] = field(default_factory=dict)           # label -> (wall, CPU-s)
    ratios: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)   # wall, CPU, lowest, highest


def part_a(scratch: pathlib.Path, submission: pathlib.Path, repeat: int) -> OneSubmission:
    """The grader's command (grading, then the class reports) and the runtime's alone (what Gradescope's run
    calls), each paired with a bare import in every round, all three alternately under the same load."""
    timed([PYTHON, "-c", "import torch"], "import torch")   # a warm-up, not counted: the file cache
    measured = OneSubmission(os.getloadavg(), repeat)
    commands = {BARE: lambda _run: [PYTHON, "-c", "import torch"],
                "python -m autograder grade ONE.zip": lambda run: [
                    PYTHON, "-m", "autograder", "grade", submission, "--out", scratch / f"one-{run}", "--workers", "1"],
                "python -m grader ONE.zip": lambda run: [
                    PYTHON, "-m", "grader", submission, "--out", scratch / f"runtime-{run}",
                    "--workers", "1"]}
    runs: dict[str, list[tuple[float, float]]] = {label: [] for label in commands}   # (wall, CPU) per round
    for run in range(repeat):
        for label, command in commands.items():
            runs[label].append(timed_cpu(command(run), label))
    print(f"(a) one submission from a cold start, median of {repeat} paired runs; load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for label, timings in runs.items():
        walls = [w for w, _ in timings]
        measured.timings[label] = (statistics.median(walls), statistics.median(c for _, c in timings))
        _line(label, f"{measured.timings[label][0]:8.2f} s wall, {measured.timings[label][1]:6.2f} CPU-s   "
                     f"(wall runs: {_runs(walls)})")
    for label, timings in list(runs.items())[1:]:
        walls = [one / bare for (bare, _), (one, _) in zip(runs[BARE], timings, strict=True)]
        cpus = [one / bare for (_, bare), (_, one) in zip(runs[BARE], timings, strict=True)]
        measured.ratios[label] = (statistics.median(walls), statistics.median(cpus), min(walls), max(walls))
        _line(f"ratio {label.removeprefix('python -m ').removesuffix(' ONE.zip')} / import torch",
              f"{measured.ratios[label][0]:8.2f}x wall (target: at most {TARGET_RATIO:g}x), "
              f"{measured.ratios[label][1]:.2f}x CPU   (runs: {_runs(walls)})")
    return measured


def part_b(scratch: pathlib.Path, zips: list[pathlib.Path], autograder: pathlib.Path | None, why: str,
           otter: bool = True) -> tuple[int, int, float]:
    """(submissions, workers, seconds) of the engine's batch; `otter run` one by one beside it, where asked."""
    workers = os.cpu_count() or 1
    out = scratch / "batch"
    engine = timed([PYTHON, "-m", "autograder", "grade", zips[0].parent, "--out", out], "the batch")
    n = len(zips)
    print(f"(b) {n} submissions")
    _line(f"python -m autograder grade ({workers} workers)", f"{engine:8.2f} s   ({engine / n:.2f} s each)")
    if n == 100 and workers == 2:
        _line("before the kernel sandbox (issue 11)", f"{BEFORE_100_SECONDS:8.2f} s   (ratio now / before: "
              f"{engine / BEFORE_100_SECONDS:.2f})")
    if otter:
        _time_otter(scratch, zips, autograder, why, out, engine)
    return n, workers, engine


def _time_otter(scratch: pathlib.Path, zips: list[pathlib.Path], autograder: pathlib.Path | None, why: str,
                out: pathlib.Path, engine: float) -> None:
    """`otter run` once per submission, one after another, against the engine's batch of the same (in out)."""
    n = len(zips)
    if autograder is None:
        print(f"    otter run: not timed: {why}")
        return
    otter_seconds, agree = 0.0, 0
    for index, submission in enumerate(zips):
        result = scratch / f"otter-{index}"
        result.mkdir()
        otter_seconds += timed([PYTHON, "-m", "otter", "run", "--no-logo", "-a", autograder, "-o", result, submission],
                       f"otter run {submission.name}")
        theirs = json.loads((result / "results.json").read_text())["score"]
        ours = json.loads((out / "results" / f"{submission.stem}.json").read_text())["score"]
        agree += abs(theirs - ours) < 1e-6
    _line("otter run -a autograder.zip, one by one", f"{otter_seconds:8.2f} s   ({otter_seconds / n:.2f} s each)")
    _line("ratio otter run / engine", f"{otter_seconds / engine:8.2f}x")
    print(f"    scores that agree: {agree}/{n}")


def _line(label: str, value: str) -> None:
    print(f"    {label:<44}{value}")


def _runs(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100, help="submissions in part (b) (default 100)")
    parser.add_argument("--repeat", type=int, default=3, help="timings per command in part (a) (default 3)")
    parser.add_argument("--autograder", type=pathlib.Path, default=REPO / "dist" / "autograder.zip",
                        help="Gradescope autograder zip for otter run (default dist/autograder.zip; built if missing)")
    parser.add_argument("--no-otter", action="store_true", help="time the engine only, not `otter run` per submission")
    figures.add_option(parser, DOCUMENT, BLOCK)
    args = parser.parse_args(argv)
    if args.count < 1 or args.repeat < 1:
        parser.error("--count and --repeat must be at least 1")
    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as scratch:
        scratch = pathlib.Path(scratch)
        zips = write_class(scratch, args.count)
        one = part_a(scratch, zips[0], args.repeat)
        autograder, why = (None, "") if args.no_otter else autograder_zip(args.autograder.resolve())
        batch = part_b(scratch, zips, autograder, why, otter=not args.no_otter)
    if args.write_docs:
        print(f"wrote {figures.write(DOCUMENT, BLOCK, docs_table(one, batch), one.load)}")
    return 0


DOCUMENT, BLOCK = "docs/design.md", "one-submission"


def docs_table(one: OneSubmission, batch: tuple[int, int, float]) -> str:
    """This run's figures as the documents show them: part (a)'s and part (b)'s (submissions, workers, seconds)."""
    bare_wall, bare_cpu = one.timings[BARE]
    lines = ["| measurement | wall | CPU (whole process tree) | ratio to the import (median of paired runs) |",
             "|---|---|---|---|", f'| `{BARE}` | {bare_wall:.2f} s | {bare_cpu:.2f} s | |']
    for label, what in (("python -m autograder grade ONE.zip", "the grader's command: the batch, then the reports"),
                        ("python -m grader ONE.zip", "the runtime alone: Gradescope's run")):
        wall, cpu = one.timings[label]
        ratio, cpu_ratio, low, high = one.ratios[label]
        lines.append(f"| `{label}` ({what}) | {wall:.2f} s | {cpu:.2f} s | {ratio:.2f}x wall ({low:.2f}x to "
                     f"{high:.2f}x), {cpu_ratio:.2f}x CPU (target: at most {TARGET_RATIO:g}x wall) |")
    n, workers, seconds = batch
    lines.append(f"| {n} submissions, `python -m autograder grade` ({workers} workers) | {seconds:.1f} s "
                 f"({seconds / n:.2f} s each) | | |")
    return "\n".join(lines) + f"\n\nOne submission: {one.repeat} rounds, the three commands alternately."


if __name__ == "__main__":
    sys.exit(main())
