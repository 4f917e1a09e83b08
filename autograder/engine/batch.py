"""Grade a batch of submissions in parallel into an output folder (resumable)."""
from __future__ import annotations

import collections
import os
import pathlib
import select
import shutil
import signal
import tempfile
import time

from autograder.engine import gradebook, isolation, submissions, worker
from autograder.engine.pool import Job, Template
from autograder.engine.progress import Progress
from autograder.paths import REPO

# Checked after closing the repository: each must be unreadable to a sandbox's user.
SECRETS = (REPO / "grading_tests", REPO / "assignment", REPO / ".git")
SAFETY_MARGIN = 120.0   # seconds past a worker's own deadline before the batch kills it


def isolation_note(out: pathlib.Path, paths: list[str], sources: list[str]) -> str:
    """Close the repository, the submissions and out/ to sandbox users (as root) and say how isolated this run is."""
    if not isolation.privileged():
        return "not isolated (not root)"
    closed = [REPO, out, *map(pathlib.Path, paths), *map(pathlib.Path, sources)]
    for path in closed:
        isolation.hide_from_others(path)
    leaks = isolation.readable_by_stranger([p for p in [*SECRETS, *closed] if p.exists()])
    return "isolated" if not leaks else "partially isolated: the sandbox can read " + ", ".join(leaks)


def grade_all(paths, out, *, workers: int, limits: isolation.Limits, progress_stream=None) -> tuple[list[dict], str]:
    """Grade everything under paths that out/ has no result for yet; returns (all rows, isolation note)."""
    for raw in paths:
        if not os.path.lexists(raw):
            raise FileNotFoundError(f"{raw}: no such file or folder")
    sandbox_root = tempfile.mkdtemp(prefix="autograder-sandboxes-")
    os.chmod(sandbox_root, 0o711)   # a sandbox may enter its own folder, never list the others
    trusted_root = tempfile.mkdtemp(prefix="autograder-trusted-")
    settings = worker.Settings(limits, isolation.privileged(), sandbox_root, trusted_root)
    template = Template(settings)   # forked before anything about the class is read
    try:
        found = submissions.discover(paths)
        out = pathlib.Path(out)
        (out / "results").mkdir(parents=True, exist_ok=True)
        note = isolation_note(out, list(paths), sorted({s.source for s in found}))
        done = gradebook.load_done(out)
        rows = [{**done[s.slug], "submission": s.name} for s in found if s.slug in done]
        todo = [s for s in found if s.slug not in done]
        progress = Progress(len(todo), len(rows), progress_stream)
        rows += _grade(template, todo, out, workers, limits, note, list(rows), progress)
        progress.close()
    finally:
        template.close()
        shutil.rmtree(sandbox_root, ignore_errors=True)
        shutil.rmtree(trusted_root, ignore_errors=True)
    gradebook.write_csv(out, rows)
    gradebook.write_summary_png(out, rows)
    return rows, note


def _grade(template: Template, todo, out, workers, limits, note, earlier_rows, progress) -> list[dict]:
    """Run up to `workers` submissions at once; write each result as soon as it is in."""
    waiting = collections.deque(todo)
    running = {}   # result fd -> (submission, job)
    rows: list[dict] = []
    allowed = limits.budget + worker.GRACE + SAFETY_MARGIN

    def record(submission, outcome):
        row = gradebook.row_from_outcome(submission, outcome, note)
        gradebook.write_result(out, row, gradebook.results_document(outcome, row))
        rows.append(row)
        gradebook.write_csv(out, earlier_rows + rows)
        progress.finished(row["status"], submission.name)

    progress.show()
    while waiting or running:
        while waiting and len(running) < workers:
            submission = waiting.popleft()
            try:
                job = template.start(submission.source, time.monotonic() + allowed)
            except (OSError, RuntimeError) as error:   # the template is gone: every row still gets written
                record(submission, Job.failed(f"grader error: could not start grading ({error})"))
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
        for submission, job in running.values():
            if time.monotonic() > job.deadline:   # a hung worker: an engine bug, never the student's code
                _kill_group(job.pid)
        if not ready:
            progress.show()
    return rows


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
