"""Grade a batch of submissions in parallel into an output folder (resumable)."""
from __future__ import annotations

import multiprocessing
import os
import pathlib
import shutil
import tempfile
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

from autograder.engine import gradebook, isolation, submissions, worker
from autograder.engine.progress import Progress

REPO = pathlib.Path(__file__).resolve().parents[2]
HIDDEN_FROM_SANDBOX = (REPO / "grading_tests", REPO / "assignment")


def isolation_note(out: pathlib.Path, sources: list[str]) -> str:
    """Lock the graded files away from sandbox users (as root) and say how isolated this run is."""
    if not isolation.privileged():
        return "not isolated (not root)"
    protected = [*HIDDEN_FROM_SANDBOX, out, *map(pathlib.Path, sources)]
    for path in protected:
        isolation.hide_from_others(path)
    leaks = isolation.readable_by_stranger([p for p in protected if p.exists()])
    return "isolated" if not leaks else "partially isolated: the sandbox can read " + ", ".join(leaks)


def grade_all(paths, out, *, workers: int, limits: isolation.Limits, progress_stream=None) -> tuple[list[dict], str]:
    """Grade everything under paths that out/ has no result for yet; returns (all rows, isolation note)."""
    found = submissions.discover(paths)
    out = pathlib.Path(out)
    (out / "results").mkdir(parents=True, exist_ok=True)
    note = isolation_note(out, sorted({s.source for s in found}))
    done = gradebook.load_done(out)
    rows = [{**done[s.slug], "submission": s.name} for s in found if s.slug in done]
    todo = [s for s in found if s.slug not in done]
    progress = Progress(len(todo), len(rows), progress_stream)
    if todo:
        rows += _grade(todo, out, workers, limits, note, rows, progress)
    progress.close()
    gradebook.write_csv(out, rows)
    gradebook.write_summary_png(out, rows)
    return rows, note


def _grade(todo, out, workers, limits, note, earlier_rows, progress) -> list[dict]:
    sandbox_root = tempfile.mkdtemp(prefix="autograder-sandboxes-")
    os.chmod(sandbox_root, 0o711)   # a sandbox may enter its own folder, never list the others
    trusted_root = tempfile.mkdtemp(prefix="autograder-trusted-")
    settings = worker.Settings(limits, isolation.privileged(), sandbox_root, trusted_root)
    worker.prepare_template()       # torch imported once, inherited by every fork
    rows: list[dict] = []
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
            pending = {pool.submit(worker.grade_one, s.source, settings): s for s in todo}
            progress.show()
            while pending:
                finished, _ = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
                for future in finished:
                    submission = pending.pop(future)
                    try:
                        outcome = future.result()
                    except Exception as error:  # noqa: BLE001 - an engine failure still gets a row
                        outcome = {"status": "error", "message": f"grader error: {type(error).__name__}: {error}",
                                   "score": 0.0, "results": None}
                    row = gradebook.row_from_outcome(submission, outcome, note)
                    gradebook.write_result(out, row, gradebook.results_document(outcome, row))
                    rows.append(row)
                    gradebook.write_csv(out, earlier_rows + rows)
                    progress.finished(row["status"], submission.name)
                if not finished:
                    progress.show()
    finally:
        shutil.rmtree(sandbox_root, ignore_errors=True)
        shutil.rmtree(trusted_root, ignore_errors=True)
    return rows
