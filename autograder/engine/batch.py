"""Grade a batch of submissions in parallel into an output folder (resumable)."""
from __future__ import annotations

import collections
import contextlib
import os
import pathlib
import select
import shutil
import tempfile
import time

from autograder.engine import gradebook, isolation, processes, submissions
from autograder.engine.limits import Limits
from autograder.engine.outcome import Outcome
from autograder.engine.pool import Template
from autograder.engine.progress import Progress
from autograder.engine.run_settings import Settings
from autograder.paths import REPO

# Closed to other users when the sandboxes have their own user id (root): each must be unreadable to them.
SECRETS = (REPO / "grading_tests", REPO / "assignment", REPO / ".git")
SAFETY_MARGIN = 120.0   # seconds past a worker's own deadline before the batch kills it


def isolation_note(plan: isolation.Plan, out: pathlib.Path, paths: list[str], sources: list[str]) -> str:
    """The run's isolation line. With its own user id per sandbox (root), the repository, the submissions and
    out/ are also closed to other users; without Landlock that is what keeps the hidden tests away, so the
    line names anything a stranger could still read."""
    note = plan.line()
    if not plan.has("uid"):
        return note
    closed = [REPO, out, *map(pathlib.Path, paths), *map(pathlib.Path, sources)]
    for path in closed:
        isolation.hide_from_others(path)
    if plan.has("landlock"):
        return note
    leaks = isolation.readable_by_stranger([p for p in [*SECRETS, *closed] if p.exists()])
    return note + ("; the sandbox can read " + ", ".join(leaks) if leaks else "")


def grade_all(paths, out, *, workers: int, limits: Limits, progress_stream=None,
              keep: str | None = None) -> tuple[list[dict], str]:
    """Grade everything under paths that out/ has no result for yet; returns (all rows, isolation note).
    keep: a folder that gets, per submission, its trusted-side pytest log and its sandboxes' output."""
    for raw in paths:
        if not os.path.lexists(raw):
            raise FileNotFoundError(f"{raw}: no such file or folder")
    sandbox_root = tempfile.mkdtemp(prefix="autograder-sandboxes-")
    os.chmod(sandbox_root, 0o711)   # a sandbox may enter its own folder, never list the others
    trusted_root = tempfile.mkdtemp(prefix="autograder-trusted-")
    exports_root = tempfile.mkdtemp(prefix="autograder-exports-")   # export zips extracted: ours alone (0700)
    template = Template(Settings(limits, None, sandbox_root, trusted_root))   # before reading the class
    try:
        plan = isolation.probe(sandbox_root)   # while the template imports torch
        template.set_plan(plan)
        out = pathlib.Path(out)
        (out / "results").mkdir(parents=True, exist_ok=True)
        done, taken = gradebook.load_done(out)
        found = submissions.discover(paths, taken, staging=exports_root)
        note = isolation_note(plan, out, list(paths), sorted({s.location for s in found}))
        rows = [{**done[s.source], **gradebook.identity(s)} for s in found if s.source in done]
        todo = [s for s in found if s.source not in done]
        progress = Progress(len(todo), len(rows), progress_stream)
        rows += _grade(template, todo, out, workers, limits, note, list(rows), progress, keep)
        progress.close()
    finally:
        template.close()
        _remove_roots(sandbox_root, trusted_root)
        shutil.rmtree(exports_root, ignore_errors=True)
    gradebook.write_csv(out, rows)
    gradebook.write_summary_png(out, rows)
    return rows, note


def _remove_roots(sandbox_root: str, trusted_root: str) -> None:
    """The trusted processes' folder is ours alone. The sandboxes' folder is removed only if its workers left it
    empty: root never deletes in a folder a sandbox could have written to."""
    shutil.rmtree(trusted_root, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.rmdir(sandbox_root)


def _grade(template: Template, todo, out, workers, limits: Limits, note, earlier_rows, progress,
           keep: str | None = None) -> list[dict]:
    """Run up to `workers` submissions at once; write each result as soon as it is in."""
    waiting = collections.deque(todo)
    running = {}   # result fd -> (submission, job)
    rows: list[dict] = []
    allowed = limits.budget + limits.grace + SAFETY_MARGIN

    def record(submission, outcome: Outcome):
        attempts = gradebook.attempts_before(out, submission.slug) + 1 if outcome.engine_failure else 1
        row = gradebook.row_from_outcome(submission, outcome, note, attempts)
        gradebook.write_result(out, row, gradebook.results_document(outcome, row))
        rows.append(row)
        gradebook.write_csv(out, earlier_rows + rows)
        progress.finished(row["status"], submission.name)

    progress.show()
    while waiting or running:
        while waiting and len(running) < workers:
            submission = waiting.popleft()
            try:
                kept = os.path.join(os.path.abspath(keep), submission.slug) if keep else None
                job = template.start(submission.location, time.monotonic() + allowed, kept)
            except (OSError, RuntimeError) as error:   # the template is gone: every row still gets written
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
            record(submission, job.outcome())
        for _submission, job in running.values():
            if time.monotonic() > job.deadline:   # a hung worker: an engine bug, never the student's code
                processes.kill_group(job.pid)
        if not ready:
            progress.show()
    return rows

