"""One submission through Gradescope's run_autograder (harness emulation), `otter run` and the batch command,
side by side in one run: wall time and peak memory of each whole process tree; plus build time and zip size.

    python benchmarks/bench_otter.py [--repeat 3] [--submission reference|stubs]
                                     [--container 0.5,768 ...] [--skip-otter-run] [--write-docs]

Times are wall-clock times of the command a person (or Gradescope) starts, process start included;
medians over --repeat runs, taken in turn so that all commands see the same machine load. Memory is the
sum of PSS over the process tree at its sampled peak, with its anonymous part, the floor a memory limit
must hold (benchmarks/process_tree.py; RSS beside it).
--container CPUS,MIB runs run_autograder once more inside a cgroup with that CPU quota and memory limit,
as Gradescope does (its default is 0.5 CPU, 768 MB): does it finish, how long, the cgroup's peak.
--write-docs writes the table into docs/instructors.md's block "gradescope-resources" (benchmarks/figures.py).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from autograder.otter import harness, image  # noqa: E402
from autograder.samples import write_submission  # noqa: E402
from benchmarks import figures  # noqa: E402
from benchmarks.process_tree import Container, Measurement, available, measure  # noqa: E402

DOCUMENT, BLOCK = "docs/instructors.md", "gradescope-resources"

OTTER = pathlib.Path(sys.executable).parent / "otter"


def timed(command: list[str], cwd: pathlib.Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-2000:]}")
    return time.perf_counter() - start


def checked(label: str, measurement: Measurement) -> Measurement:
    if measurement.returncode != 0:
        raise SystemExit(f"{label} failed (exit {measurement.returncode}):\n{measurement.output[-2000:]}")
    return measurement


class Commands:
    """The three ways to grade one submission, each measured from a fresh start."""

    def __init__(self, scratch: pathlib.Path, autograder: pathlib.Path, submission: pathlib.Path):
        self.scratch, self.autograder, self.submission = scratch, autograder, submission
        self.count = 0

    def _fresh(self, label: str) -> pathlib.Path:
        self.count += 1
        folder = self.scratch / f"{label}-{self.count}"
        folder.mkdir()
        return folder

    def engine(self) -> Measurement:
        out = self._fresh("engine")
        return checked("engine", measure([sys.executable, "-m", "autograder", "grade", str(self.submission),
                                          "--out", str(out / "out"), "--workers", "1"], REPO))

    def harness(self, container: Container | None = None) -> Measurement:
        root = self._fresh("harness") / "autograder"
        script = harness.lay_out(self.autograder, self.submission, root)
        env = {**os.environ, image.PYTHON_OVERRIDE: sys.executable}
        result = measure([str(script)], root, env, container)
        return result if container else checked("run_autograder", result)

    def otter_run(self) -> Measurement:
        folder = self._fresh("otter")
        return checked("otter run", measure([str(OTTER), "run", "--no-logo", "-a", str(self.autograder), "-o",
                                             str(folder), str(self.submission)], folder))


def row(label: str, runs: list[Measurement]) -> str:
    seconds = statistics.median(m.seconds for m in runs)
    pss, rss = max(m.peak_pss_mib for m in runs), max(m.peak_rss_mib for m in runs)
    anon, processes = max(m.peak_anon_mib for m in runs), max(m.processes for m in runs)
    spread = ", ".join(f"{m.seconds:.1f}" for m in runs)
    return (f"  {label:<36}{seconds:5.1f} s ({spread})  PSS {pss:4.0f} MiB (anonymous {anon:3.0f})  "
            f"RSS {rss:4.0f} MiB  {processes} processes")


def parse_container(text: str) -> Container:
    cpus, mib = text.split(",")
    return Container(float(cpus), int(mib))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="gradings per command (default 3)")
    parser.add_argument("--submission", choices=("reference", "stubs"), default="reference")
    parser.add_argument("--container", type=parse_container, action="append", default=[], metavar="CPUS,MIB",
                        help="also run run_autograder in a cgroup with this CPU quota and memory limit (root)")
    parser.add_argument("--skip-otter-run", action="store_true", help="leave out `otter run`")
    figures.add_option(parser, DOCUMENT, BLOCK)
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    for container in args.container:
        if available(container):
            parser.error(f"--container: {available(container)}")
    python = sys.executable
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-otter-") as scratch:
        scratch = pathlib.Path(scratch)
        build_s = timed([python, "-m", "autograder", "build", "--out", str(scratch / "dist")], REPO)
        autograder = scratch / "dist" / "autograder.zip"
        size_kib = autograder.stat().st_size / 1024
        folder = write_submission(scratch / args.submission, solution=args.submission == "reference")
        submission = scratch / f"{args.submission}.zip"
        timed([python, "-m", "student.submit", "--no-checks", "--out", str(submission)], folder)
        commands = Commands(scratch, autograder, submission)

        engine, gradescope, otter = [], [], []
        for _ in range(args.repeat):
            engine.append(commands.engine())
            gradescope.append(commands.harness())
            if not args.skip_otter_run:
                otter.append(commands.otter_run())
        contained = [(container, commands.harness(container)) for container in args.container]

    print(f"build (python -m autograder build)   {build_s:6.1f} s")
    print(f"autograder.zip                        {size_kib:6.0f} KiB")
    print(f"grading one {args.submission} submission, median of {args.repeat} (peak memory: the largest run's):")
    print(row("python -m autograder grade", engine))
    print(row("Gradescope harness (run_autograder)", gradescope))
    if otter:
        print(row("otter run -a autograder.zip", otter))
    base = statistics.median(m.seconds for m in engine)
    print(f"  ratio run_autograder / engine        {statistics.median(m.seconds for m in gradescope) / base:6.2f}x")
    if otter:
        print(f"  ratio otter run / engine             {statistics.median(m.seconds for m in otter) / base:6.2f}x")
    for container, run in contained:
        verdict = "OOM-killed" if run.oom_killed else f"finished (exit {run.returncode})"
        print(f"run_autograder in a container of {container}: {verdict} in {run.seconds:.1f} s; peak PSS "
              f"{run.peak_pss_mib:.0f} MiB (anonymous {run.peak_anon_mib:.0f}), "
              f"cgroup peak {run.cgroup_peak_mib:.0f} MiB")
    if args.write_docs:
        text = docs_table(args, build_s, size_kib, engine, gradescope, otter, contained)
        print(f"wrote {figures.write(DOCUMENT, BLOCK, text, load)}")
    return 0


def docs_table(args, build_s: float, size_kib: float, engine, gradescope, otter, contained) -> str:
    """This run's figures as docs/instructors.md shows them."""
    def median(runs):
        return statistics.median(m.seconds for m in runs)

    base = median(engine)
    lines = [f"One {args.submission} submission, median of {args.repeat}, peak memory of the whole process tree "
             "(PSS):", "", "| command | time | peak memory |", "|---|---|---|",
             f"| `python -m autograder grade` | {base:.1f} s | {max(m.peak_pss_mib for m in engine):.0f} MiB |",
             f"| Gradescope harness (`run_autograder`) | {median(gradescope):.1f} s ({median(gradescope) / base:.2f}x "
             f"the engine) | {max(m.peak_pss_mib for m in gradescope):.0f} MiB |"]
    if otter:
        lines.append(f"| `otter run -a dist/autograder.zip` | {median(otter):.1f} s ({median(otter) / base:.2f}x the "
                     f"engine) | {max(m.peak_pss_mib for m in otter):.0f} MiB |")
    for container, run in contained:
        verdict = "OOM-killed" if run.oom_killed else f"{run.seconds:.1f} s"
        lines.append(f"| `run_autograder` in a cgroup of {container.cpus:g} CPU, {container.mib} MiB | {verdict} | "
                     f"cgroup peak {run.cgroup_peak_mib:.0f} MiB (margin {container.mib - run.cgroup_peak_mib:.0f}) |")
    lines += ["", f"Build (`python -m autograder build`, otter assign's output cached): {build_s:.1f} s; "
              f"`autograder.zip`: {size_kib:.0f} KiB."]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
