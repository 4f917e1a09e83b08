"""python -m grader PATH... --out DIR [--workers N] [--timeout S] [--budget S] [--memory-gb G]
                                    [--keep DIR] [--force NAME] [--regrade] [--repeat N] [--due TIME] [--private PATH]
                                    [--no-exports] [--shard I/N] [--public-checks]

The runtime's batch command (what Gradescope's run and `otter run` call; `python -m autograder grade` is this
and then the class reports, autograder/reports/).

Grades submissions (folders or zips holding student/, or folders of them; a Gradescope export, its folder or its
zip, is read by `python -m autograder grade`, which reads its metadata) with the hidden suite, each in its
own sandbox, into DIR: grades.csv (one row per student) and results/<submission>.json (Gradescope
schema), and nothing else. Run it again with the same --out to finish an interrupted run; a
submission changed since it was graded is graded again. --regrade grades everything again after a
change of the suite or the limits, keeping the earlier results in DIR/earlier/ and listing what
changed in changes.csv. The limits default to the spec's settings (assignment/assignment.toml).

Exit status: 0 when at least one submission was graded; 1 when every row is an error (nothing
could be graded: most likely the wrong folder was given); 2 for a missing path or an export zip
that cannot be read; 130 when interrupted.

A class larger than one machine: run `--shard I/N` for I = 1..N on as many machines (a cluster's array
job), all with the same PATHs and one shared --out; each grades its share and writes its results. Then
run the same command once without --shard: it finds everything graded, grades nothing again, and writes
grades.csv over the whole class (`python -m autograder grade` also the class reports).
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grader.run.run_settings import RunSettings

# The paragraphs of this docstring that a command built on this one shows in its --help as they are.
SHARED_HELP = ("Exit status:", "A class larger than one machine:")


def parser(prog: str = "python -m grader", doc: str = __doc__) -> argparse.ArgumentParser:
    from grader.contain.limits import Limits  # the spec: after the template started (main)

    defaults = Limits()
    paragraphs = doc.split("\n\n")[1:]
    if doc is not __doc__:   # a command built on this one says what it adds; the exit status and shards are these
        paragraphs += [text for text in __doc__.split("\n\n") if text.startswith(SHARED_HELP)]
    p = argparse.ArgumentParser(prog=prog, description="\n\n".join(paragraphs),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="a submission (folder or .zip), a folder of them, or (python -m autograder grade) a Gradescope "
                        "export (folder or .zip)")
    p.add_argument("--out", required=True, help="output folder (created; reused to resume)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                   help="submissions graded at once (default: the core count)")
    p.add_argument("--timeout", type=float, default=defaults.call_timeout,
                   help=f"CPU seconds one call into student code may take (default {defaults.call_timeout:g}); "
                        f"{defaults.wall_factor:g} times that of load-free time (wall-clock time less waits for a "
                        f"busy machine's CPU)")
    p.add_argument("--budget", type=float, default=defaults.budget,
                   help=f"seconds of student code per submission, of CPU time and of load-free time "
                        f"(default {defaults.budget:g}); the points earned before it runs out are kept")
    p.add_argument("--memory-gb", type=float, default=defaults.memory_bytes / 2**30,
                   help=f"memory of a sandbox in GiB, all its processes together where the memory layer holds, "
                        f"else the address space of each (default {defaults.memory_bytes / 2**30:g})")
    p.add_argument("--keep", metavar="DIR", default=None,
                   help="keep, per submission, its trusted-side pytest log and its sandboxes' output in DIR/<name>/ "
                        "(a grader error row names the file)")
    p.add_argument("--force", metavar="NAME", action="append", default=[],
                   help="grade this submission again although out/ has its result (repeatable; its name in "
                        "grades.csv, or its results file's name). A submission whose content changed since it "
                        "was graded is graded again without being asked, and its row says so")
    p.add_argument("--regrade", action="store_true",
                   help="grade every submission again (after the suite, the reference or the limits changed): the "
                        "earlier results move to DIR/earlier/<time>/ and DIR/changes.csv lists every submission whose "
                        "score or any test's verdict changed")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="grade every submission N times in all (DIR/repeat-2/ ...) and list in DIR/repeat.csv every "
                        "submission whose result differed: a flaky test, or code whose result depends on the run")
    p.add_argument("--due", metavar="TIME", default=None,
                   help="the due date, as 2026-11-20T23:59:00-05:00, for the late column where an export's metadata "
                        "names none (hours after it; no late policy is applied)")
    p.add_argument("--private", metavar="PATH", action="append", default=[],
                   help="a file or folder of the grader's that no sandbox may read (repeatable): closed to other "
                        "users when sandboxes have their own user id, and named in the isolation line if a sandbox "
                        "could still read it (Gradescope's runner passes /autograder/submission_metadata.json)")
    p.add_argument("--shard", metavar="I/N", type=shard, default=None,
                   help="grade only share I of N of the class (a stable split by submission), into an --out that the "
                        "other shards share; no grades.csv: run once more without --shard when every shard is done")
    p.add_argument("--gpu", action="store_true",
                   help="grade on this machine's NVIDIA GPUs too: each submission's sandboxes get one GPU of their "
                        "own (its driver files and nothing else; one submission per GPU at a time, so --workers is "
                        "at most the GPU count) and the hidden suite's CUDA tests run in them. Refused where no "
                        "GPU is present; without it the CUDA tests are reported as not run")
    p.add_argument("--no-exports", dest="exports", action="store_false",
                   help="read no PATH as a Gradescope export: each is a submission or a folder of them (how the "
                        "Gradescope harness grades one upload, which a student could dress up as an export)")
    p.add_argument("--public-checks", action="store_true",
                   help="also run the handout's public checks (the instructor's copies of student/tests/) on each "
                        "submission, in a sandbox of their own, as entries worth no points that students see at "
                        "once (what Gradescope's runtime does where the spec's public_checks setting is true)")
    return p


def shard(text: str) -> tuple[int, int]:
    """"2/8" -> (2, 8), for argparse."""
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise argparse.ArgumentTypeError(f"{text!r}: give I/N with 1 <= I <= N, as 2/8")
    return int(index), int(count)


def main(argv=None, started: tuple[int, int] | None = None) -> int:
    """started: the template template_boot.start() began, where the command started it first of all."""
    code, run, args = grade(argv, started=started)
    return code if run is None else main_output(run, args.out, code)


def main_output(run, out: str, code: int) -> int:
    """Print the closing table and lines of a run (the runtime's own, without class reports); returns code."""
    from grader.run import gradebook

    print(gradebook.table(run.rows))
    for line in closing_lines(run, out):
        print(line)
    return code


def grade(argv=None, arguments: argparse.ArgumentParser | None = None, read_metadata=None,
          started: tuple[int, int] | None = None, staging: str | None = None):
    """(exit status, the batch's BatchRun or None, the parsed arguments): the whole batch, results and grades.csv.
    read_metadata: how a Gradescope export's metadata is read (the instructor's command gives it; without it an
    export is refused, saying which command reads it). started: the template, where the caller started it.
    staging: where export zips are extracted, a private folder the caller removes after its reports (request.py)."""
    # started: torch's import in the template (a second) runs side by side with everything before the first job.
    # Else the template starts at the first job: a run that may grade nothing (a resume, the closing run of shards)
    # never imports torch.
    template = _template(started)
    try:
        return _grade(argv, template, arguments or parser(), read_metadata, staging)
    finally:
        template.close()   # grade_all closed it already where it ran


def _template(started: tuple[int, int] | None):
    from grader.run.pool import Template

    class Lazy(Template):
        """A template started at the first job (a fresh program then as at the command's start: the batch's memory,
        which now holds the class, is gone at its exec; template_boot.py), configured with the settings kept."""

        def __init__(self):
            self.real: Template | None = None
            self.settings: RunSettings | None = None
            self.closed = False

        def configure(self, settings: RunSettings) -> None:
            self.settings = settings

        def start(self, source: str, keep: str | None = None, gpu: int | None = None, *, more: bool = False):
            if self.closed:
                raise RuntimeError("the grading template process went away")
            if self.real is None:
                self.real = Template()
                if self.settings is not None:
                    self.real.configure(self.settings)
            return self.real.start(source, keep, gpu, more=more)

        def close(self) -> None:
            self.closed = True
            if self.real is not None:
                self.real.close()

    return Template(started) if started else Lazy()


def _grade(argv, template, arguments: argparse.ArgumentParser, read_metadata=None, staging=None):
    args = arguments.parse_args(argv)
    if args.workers < 1 or args.timeout <= 0 or args.budget <= 0 or args.memory_gb <= 0 or args.repeat < 1:
        print("grade: --workers, --timeout, --budget, --memory-gb and --repeat must be positive", file=sys.stderr)
        return 2, None, args
    if args.shard and (args.regrade or args.repeat > 1 or args.force):
        print("grade: --regrade, --repeat and --force act on the whole class: run them without --shard",
              file=sys.stderr)
        return 2, None, args
    from grader.run import recorded
    due = recorded.when(args.due) if args.due else None
    if args.due and due is None:
        print(f"grade: --due {args.due!r} is not a date with a time zone, as 2026-11-20T23:59:00-05:00",
              file=sys.stderr)
        return 2, None, args
    from grader.contain import gpu
    from grader.contain.limits import Limits

    gpus: tuple[int, ...] = ()
    if args.gpu:
        try:
            gpus = tuple(gpu.require())
        except gpu.GpuError as error:
            print(f"grade: --gpu: {error}", file=sys.stderr)
            return 2, None, args
    limits = Limits(call_timeout=args.timeout, budget=args.budget, memory_bytes=int(args.memory_gb * 2**30))
    from grader.run import batch, unpacking
    from grader.run.request import Request
    request = Request(args.paths, args.out, workers=min(args.workers, len(gpus) or args.workers), limits=limits,
                      keep=args.keep, private=args.private, force=args.force, regrade=args.regrade,
                      repeat=args.repeat, due=due, exports=args.exports, shard=args.shard, gpus=gpus,
                      read_metadata=read_metadata, public_checks=args.public_checks, staging=staging)
    try:
        run = batch.grade_all(request, template=template)
    except (FileNotFoundError, KeyError, batch.SetupError) as error:
        print(f"grade: {error.args[0] if isinstance(error, KeyError) else error}", file=sys.stderr)
        return 2, None, args
    except unpacking.SubmissionError as error:
        print(f"grade: cannot read the export: {error}", file=sys.stderr)
        return 2, None, args
    except KeyboardInterrupt:
        print(f"\ngrade: interrupted; what was graded is kept in {args.out}: run the same command again to finish",
              file=sys.stderr)
        return 130, None, args
    if run.rows and all(row.status == "error" for row in run.rows):
        print(f"grade: none of the {len(run.rows)} submission(s) could be graded (every row is an error): was the "
              f"right folder given? Each PATH must be a submission holding student/, a folder of them, or a "
              f"Gradescope export", file=sys.stderr)
        return 1, run, args
    return 0, run, args


def closing_lines(run, out: str, notes: Sequence[str] = (), also_wrote: str = "") -> list[str]:
    """The batch's closing lines: the isolation, what asks for the grader's attention (notes: more of it, from what
    a caller made after the batch), and what was written (also_wrote: the caller's files, after results/)."""
    from grader.contain import load_free
    where = os.path.join
    lines = ["", f"isolation: {run.note}"]
    if run.kept:   # a resume: what this run did, beside what it found done
        lines.append(f"resumed: {len(run.found) - run.kept} graded now, {run.kept} kept from an earlier run in {out}")
    if not load_free.kernel_reports_waits():
        lines.append("limits: this kernel reports no run-queue delay (/proc/PID/schedstat), so the limits on time "
                     "that is not CPU time are wall-clock time here: a busy machine can reach them")
    if run.changes is not None:
        flipped = sum(len(c.flips) for c in run.changes)
        lines.append(f"regrade: {len(run.changes)} submission(s) changed ({flipped} test verdicts flipped), listed in "
                     f"{where(out, 'changes.csv')}; the earlier results are in {run.earlier}")
    elif run.stale:
        lines.append(f"warning: {run.stale} result(s) kept in {out} were graded with another (or an unrecorded) "
                     f"suite, reference or limits than this run's: --regrade grades them again and says what changed")
    if run.closed:
        back = [path for path in run.closed if path not in run.left_closed and path not in run.not_put_back]
        lines.append("permissions: closed to other users while the sandboxes ran (each has a user id of its own)"
                     + (f"; put back: {some(back)}" if back else "")
                     + (f"; left closed while another grading run on this machine uses them (the last to end puts "
                        f"them back): {some(run.left_closed)}" if run.left_closed else ""))
    if run.not_put_back:
        lines.append(f"permissions: not put back (gone or replaced since): {some(run.not_put_back)}")
    if run.repeats is not None:
        lines.append(f"repeat: {len(run.repeats)} submission(s) got a different result when graded again "
                     f"({where(out, 'repeat.csv')})")
    lines += notes
    if run.shard:
        index, count = run.shard
        lines.append(f"wrote {where(out, 'results')}/ (shard {index} of {count}): once every shard has finished, run "
                     f"the same command without --shard; it grades nothing again and writes grades.csv")
    else:
        lines.append(f"wrote {where(out, 'grades.csv')}, {where(out, 'results')}/{also_wrote}")
    return lines


def some(paths: list, shown: int = 4) -> str:
    """The first paths (or names), printable (a folder's name may be any bytes, and a student may have chosen it)."""
    from grader.sanitize import printable

    more = len(paths) - shown
    return ", ".join(printable(str(path)) for path in paths[:shown]) + (f" and {more} more" if more > 0 else "")


if __name__ == "__main__":
    sys.exit(main())
