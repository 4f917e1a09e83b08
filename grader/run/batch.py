"""Grade a batch of submissions in parallel into an output folder (resumable)."""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import pathlib
import select
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field

from grader import source_rules
from grader.contain import isolation, memcg, permissions, processes
from grader.paths import REPO, STUDENT_DIR
from grader.row import Row
from grader.run import changes, environment, gradebook, submissions, unpacking
from grader.run.changes import Change
from grader.run.outcome import Outcome
from grader.run.pool import Template
from grader.run.progress import Progress
from grader.run.request import Request
from grader.run.run_settings import RunSettings

# Closed to other users when the sandboxes have their own user id (root): each must be unreadable to them.
SECRETS = (REPO / "grading_tests", REPO / "assignment", REPO / ".git")
SAFETY_MARGIN = 120.0   # load-free seconds past a worker's own net before the batch kills it


def closed_to_sandboxes(out: pathlib.Path, paths: list[str], sources: list[str], private: Sequence[str] = ()) -> list:
    """What a run whose sandboxes have their own user id (root) closes to other users: the repository, the
    submissions, out/ and the grader's private files (permissions.py puts their modes back at the end)."""
    unique: dict[str, pathlib.Path] = {}   # each once, in this order (a zip is both a path and a source)
    for path in [REPO, out, *map(pathlib.Path, [*paths, *sources, *private])]:
        unique.setdefault(os.path.realpath(path), path)
    return list(unique.values())


def isolation_note(plan: isolation.Plan, closed: list, gpus: tuple[int, ...] = ()) -> str:
    """The run's isolation line. Without Landlock, closing files to other users is what keeps them from the
    sandboxes, so the line names anything a stranger could still read. A GPU run says what a box may reach of
    the GPUs (only where Landlock holds is that its own GPU's driver files alone)."""
    note = plan.line()
    if gpus:
        reach = "its driver files alone" if plan.has("landlock") else "every GPU's driver files (no landlock)"
        note += f"; GPU: each submission's sandboxes one of {len(gpus)}, one at a time ({reach})"
    if not plan.has("uid") or plan.has("landlock"):
        return note
    leaks = permissions.readable_by_stranger([p for p in [*SECRETS, *closed] if p.exists()])
    return note + ("; the sandbox can read " + ", ".join(leaks) if leaks else "")


class SetupError(Exception):
    """The machine or installation cannot grade fairly as it is set up: says what to change."""


@dataclass
class BatchRun:
    """What one batch run made, besides the files in out/ (results/ and grades.csv; the class reports are made
    from them afterwards: autograder/reports/)."""
    rows: list[Row]                      # every submission's row, this run's and those kept from before
    note: str                            # the isolation line
    found: list = field(default_factory=list)                 # the submissions found (submissions.Submission)
    contents: dict[str, str] = field(default_factory=dict)    # source -> digest of what it unpacks to
    changes: list[Change] | None = None    # --regrade: against the earlier run (None: no earlier run)
    earlier: pathlib.Path | None = None            # --regrade: where the earlier run's files were moved
    repeats: list[Change] | None = None    # --repeat: what differed between the gradings
    stale: int = 0                       # results kept that were graded with another suite or other limits
    kept: int = 0                        # submissions whose results out/ held already: not graded by this run
    closed: list[str] = field(default_factory=list)          # closed to other users for the run (root)
    left_closed: list[str] = field(default_factory=list)     # of those, still used by another run on this machine
    not_put_back: list[str] = field(default_factory=list)    # gone or replaced since: their modes not restored
    shard: tuple[int, int] | None = None   # --shard: the part (i, n) of the class this run graded (no grades.csv)


def grade_all(request: Request, *, template: Template | None = None, progress_stream=None) -> BatchRun:
    """Grade everything under request.paths that its out/ has no result for yet: results/<slug>.json each, and
    grades.csv (request.py says what each field asks). A submission already graded in out/ is graded again when
    its content changed since (the row says so), or when request.force names it.
    template: one started already (the command starts it first, so that torch's import overlaps everything before
    the first job); this run closes it. None: started here."""
    for raw in request.paths:
        if not os.path.lexists(raw):
            raise FileNotFoundError(f"{raw}: no such file or folder")
    out, limits, gpus, shard = request.out, request.limits, request.gpus, request.shard
    sandbox_root = tempfile.mkdtemp(prefix="autograder-sandboxes-")
    os.chmod(sandbox_root, 0o711)   # a sandbox may enter its own folder, never list the others
    trusted_root = tempfile.mkdtemp(prefix="autograder-trusted-")
    # export zips extracted: ours alone
    exports_root = request.staging or tempfile.mkdtemp(prefix="autograder-exports-")
    template = template or Template()   # before reading the class
    closing, run = None, None
    suite = changes.graded_with(limits)
    try:
        plan = isolation.probe(sandbox_root)   # while the template imports torch
        linked = isolation.linked_through_box_tmp() if plan.has("mnt") else []
        if linked:
            raise SetupError(f"this Python is reached through {linked[0]}, which each sandbox's private /tmp hides "
                             f"(torch would fail to load parts of itself there and correct code would lose points): "
                             f"run the engine from the environment's real place, "
                             f"{os.path.join(os.path.realpath(sys.prefix), 'bin', os.path.basename(sys.executable))}")
        known = source_rules.evidence_by_digest(STUDENT_DIR)   # the handout's own files: read once, not per submission
        template.configure(RunSettings(limits, plan, sandbox_root, trusted_root, gpus, request.public_checks, known))
        (out / "results").mkdir(parents=True, exist_ok=True)
        done, taken = gradebook.load_done(out)
        found = submissions.shard_of(submissions.discover(list(request.paths), taken, staging=exports_root,
                                                          due=request.due, exports=request.exports,
                                                          read_metadata=request.read_metadata), shard)
        closed = closed_to_sandboxes(out, list(request.paths), sorted({s.location for s in found}), request.private)
        if plan.has("uid"):
            try:
                closing = permissions.Closing.begin(closed)
            except PermissionError as error:
                raise SetupError(str(error)) from None
        note = isolation_note(plan, closed, gpus)
        contents = {s.source: unpacking.fingerprint(s.location, exports_root) for s in found}
        # before anything moves: an unknown --force name stops here
        again = regrades(found, done, contents, request.force)
        earlier = changes.archive(out) if request.regrade else None
        if earlier:   # everything is graded again, under the same results file names
            before, done, again = done, {}, {}
            (out / "results").mkdir()
        todo = [s for s in found if s.source not in done or s.source in again]
        rows = [gradebook.with_identity(done[s.source], s) for s in found if s not in todo]
        progress = Progress(len(todo), len(rows), progress_stream)
        rows += _grade(template, todo, out, request, note, list(rows), progress, contents, again, suite,
                       gradebook_too=shard is None)
        progress.close()
        run = BatchRun(rows, note, found, contents, stale=sum(r.graded_with != suite for r in rows),
                  kept=len(found) - len(todo))
        if earlier:
            run.earlier = earlier
            run.changes = changes.compare((before, earlier / "results"), (_by_source(rows), out / "results"))
            changes.write(out / "changes.csv", run.changes)
        if request.repeat > 1:
            run.repeats = _repeat(template, found, request, note, suite, rows)
    finally:
        template.close()
        memcg.remove_own_run()   # the run's memory cgroup (the probe made it), with any box group left in it
        _remove_roots(sandbox_root, trusted_root)
        if closing is not None:   # no sandbox of this run is left: the modes go back (unless a run beside uses them)
            lost = closing.end()
            if run is not None:
                run.closed, run.left_closed, run.not_put_back = closing.paths, closing.left_closed, lost
        if request.staging is None:   # after the modes went back: an extracted submission removed first reads as "gone"
            shutil.rmtree(exports_root, ignore_errors=True)
    if shard is None:
        gradebook.write_csv(out, rows)
    elif run is not None:
        run.shard = shard
    return run


def _by_source(rows: list[Row]) -> dict[str, Row]:
    return {row.source: row for row in rows}


def _repeat(template, found, request: Request, note, suite, rows) -> list[changes.Change]:
    """Grade every submission again, into out/repeat-2/ ... (each a fresh folder), and compare each grading with
    the first: out/repeat.csv lists every submission where any test's verdict (or the score) differed."""
    differed: list[changes.Change] = []
    out, once = request.out, dataclasses.replace(request, keep=None)   # the logs kept are the first grading's
    for number in range(2, request.repeat + 1):
        again_out = out / f"repeat-{number}"
        shutil.rmtree(again_out, ignore_errors=True)
        (again_out / "results").mkdir(parents=True)
        progress = Progress(len(found), 0, None)
        again_rows = _grade(template, found, again_out, once, note, [], progress, suite=suite)
        differed += changes.compare((_by_source(rows), out / "results"),
                                    (_by_source(again_rows), again_out / "results"))
    changes.write(out / "repeat.csv", differed, labels=("first", "again"))
    return differed


def regrades(found, done: dict[str, Row], contents: dict[str, str], force=()) -> dict[str, str]:
    """source -> why, for each submission already graded that must be graded again: its content changed since
    (a result from before results remembered content counts as unchanged), or `force` names it."""
    unknown = set(force) - {s.name for s in found} - {s.slug for s in found}
    if unknown:
        raise KeyError(f"--force names no submission here: {', '.join(sorted(unknown))}")
    again = {}
    for submission in (s for s in found if s.source in done):
        earlier = done[submission.source]
        if submission.name in force or submission.slug in force:
            again[submission.source] = f"graded again (--force; it scored {earlier.score:g} before)"
        elif earlier.content is None or earlier.content == contents[submission.source]:
            continue
        elif not earlier.content.startswith(unpacking.CONTENT_DIGEST):
            again[submission.source] = (f"graded again: its content was recorded by an earlier version of the "
                                        f"grader, which could miss a change (it scored {earlier.score:g} before)")
        else:
            again[submission.source] = (f"graded again: the submission changed since it was graded "
                                        f"(it scored {earlier.score:g} before)")
    return again


def _remove_roots(sandbox_root: str, trusted_root: str) -> None:
    """The trusted processes' folder is ours alone. The sandboxes' folder is removed only if its workers left it
    empty: root never deletes in a folder a sandbox could have written to."""
    shutil.rmtree(trusted_root, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.rmdir(sandbox_root)


def _grade(template: Template, todo, out, request: Request, note, earlier_rows, progress, contents=None, again=None,
           suite: str = "", gradebook_too: bool = True) -> list[Row]:
    """Run up to request.workers submissions at once; write each result into out as soon as it is in (with the
    content it was graded on, and why it was graded again, if it was: see regrades), and grades.csv with it
    (gradebook_too; a shard writes none: it holds a part of the class). A GPU run gives each job a GPU no running
    job has."""
    workers, limits, keep, gpus = request.workers, request.limits, request.keep, request.gpus
    waiting = collections.deque(todo)
    running: dict[int, tuple] = {}   # result fd -> (submission, job)
    free_gpus = collections.deque(gpus)
    rows: list[Row] = []
    allowed = limits.submission_net + SAFETY_MARGIN
    allowed_wall = limits.wall_net(allowed)   # the worker's own wall net comes first

    def record(submission, outcome: Outcome):
        attempts = gradebook.attempts_before(out, submission.slug) + 1 if outcome.engine_failure else 1
        row = gradebook.row_from_outcome(
            submission, outcome, note, attempts, content=(contents or {}).get(submission.source), graded_with=suite,
            environment=environment.describe(gpu_run=bool(gpus)),   # read once a run (cached): no torch import
            again=(again or {}).get(submission.source, ""))
        gradebook.write_result(out, row, gradebook.results_document(outcome, row))
        rows.append(row)
        if gradebook_too:
            gradebook.write_csv(out, earlier_rows + rows)
        progress.finished(row.status, submission.name)

    progress.show()
    while waiting or running:
        while waiting and len(running) < workers:
            submission = waiting.popleft()
            given = free_gpus.popleft() if gpus else None
            try:
                kept = os.path.join(os.path.abspath(keep), submission.slug) if keep else None
                job = template.start(submission.location, kept, given, more=bool(waiting))
            except (OSError, RuntimeError) as error:   # the template is gone: every row still gets written
                if given is not None:
                    free_gpus.append(given)
                record(submission, Outcome.failed(f"grader error: could not start grading ({error})"))
                continue
            running[job.fd] = (submission, job)
        ready, _, _ = select.select(list(running), [], [], 1.0)
        for fd in ready:
            submission, job = running[fd]
            chunk = os.read(fd, 1 << 16)
            if chunk:
                job.data += chunk
                continue
            del running[fd]
            os.close(fd)
            if job.gpu is not None:   # its worker, trusted process and sandboxes are gone: the GPU is free
                free_gpus.append(job.gpu)
            record(submission, job.outcome())
        for _submission, job in running.values():
            if job.clock.past(allowed, allowed_wall):
                processes.kill_group(job.pid)   # a hung worker: an engine failure (graded again next run), never a zero
        if not ready:
            progress.show()
    return rows

