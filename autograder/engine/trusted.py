"""The trusted grading process of one submission: runs the hidden suite with the sandbox gateway.

Forked per submission from the template, so every submission starts from the same
clean state (same scores whatever ran before or in parallel). It is the only process
that imports grading_tests; student code never runs here.
"""
from __future__ import annotations

import json
import os
import sys

from autograder.engine import isolation
from autograder.paths import GRADING_DIR, REPO

OUTPUT_SHOWN = 2000   # characters of the submission's own printing shown in its feedback


class _ReportGrabber:
    """pytest plugin: keeps the points report of the suite's PointsRecorder."""

    report = None

    def pytest_sessionfinish(self, session):
        recorder = session.config.pluginmanager.get_plugin("attention-points")
        self.report = recorder.report() if recorder is not None else None


def run(control, private_dir: str, work_dir: str, limits: isolation.Limits, isolated: bool) -> None:
    """Body of the forked trusted process: grade, write work_dir/result.json, never return."""
    code = 0
    try:
        log_fd = os.open(os.path.join(work_dir, "pytest.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.chdir(work_dir)   # anything pytest or hypothesis writes stays in this private folder
        uid = None
        if isolated:
            uid = isolation.sandbox_uid(os.getpid())
            _give_to(private_dir, uid)
        result = grade(control, private_dir, limits, uid, isolated)
        _write_json(os.path.join(work_dir, "result.json"), result)
    except BaseException as error:  # noqa: BLE001 - reported to the template as a grader error
        code = 1
        try:
            print(f"grader error: {type(error).__name__}: {error}", flush=True)
        finally:
            pass
    finally:
        sys.stdout.flush()
        os._exit(code)


def grade(control, private_dir: str, limits: isolation.Limits, uid: int | None, isolated: bool) -> dict:
    import pytest

    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from autograder.engine.client import SandboxGateway, SessionLog, Spawner
    from grading_tests import conftest
    from grading_tests.scoring import gradescope_results

    log = SessionLog()
    gateways = []

    def factory(_config):
        gateways.append(SandboxGateway(Spawner(control), limits, log, uid))
        return gateways[-1]

    conftest.set_gateway_factory(factory)
    grabber = _ReportGrabber()
    exit_code = pytest.main([str(GRADING_DIR), "-q", "--no-header", "-p", "no:cacheprovider", f"--rootdir={REPO}",
                             "-o", "addopts=", "--tb=line"], plugins=[grabber])
    for gateway in gateways:
        gateway.close()
    status, message = judge(log, limits, int(exit_code), grabber.report)
    if grabber.report is None:
        return {"status": "error", "message": message, "score": 0.0, "results": None, "engine_failure": True}
    results = gradescope_results(grabber.report, extra_output=feedback_notes(log, status, message, isolated))
    suite_failed = int(exit_code) not in (0, 1)   # pytest itself failed: the engine's fault, not the student's
    return {"status": status, "message": message, "engine_failure": suite_failed,
            "score": grabber.report.score, "max_score": grabber.report.max_score,
            "part_scores": {str(p): s for p, s in grabber.report.part_scores.items()},
            "part_max": {str(p): s for p, s in grabber.report.part_max.items()}, "results": results}


def judge(log, limits: isolation.Limits, exit_code: int, report) -> tuple[str, str]:
    """(status, one-line message) for the gradebook."""
    if exit_code not in (0, 1) or report is None:
        return "error", f"grader error: the grading suite exited with code {exit_code} (see the engine's log)"
    if log.import_failure is not None:
        failure = log.import_failure
        status = "timeout" if failure.type_name == "Timeout" else "error"
        return status, _one_line(f"{failure.type_name}: {failure.message}")
    if log.budget_exhausted:
        return "timeout", f"time budget of {limits.budget:g} s used up; later calls were not run"
    if log.timeouts:
        names = ", ".join(sorted(set(log.timeouts)))
        return "timeout", f"{len(log.timeouts)} call(s) timed out after {limits.call_timeout:g} s: {names}"
    if log.refusals:
        names = ", ".join(sorted(set(log.refusals)))
        return "graded", f"{len(log.refusals)} answer(s) refused as malformed or forged: {names}"
    if log.crashes:
        names = ", ".join(sorted(set(log.crashes)))
        return "graded", f"the sandbox died in {len(log.crashes)} call(s) and was restarted: {names}"
    return "graded", ""


def feedback_notes(log, status: str, message: str, isolated: bool) -> str:
    notes = [] if status == "graded" and not message else [f"{status}: {message}"]
    if log.output_total:
        shown = bytes(log.output[:OUTPUT_SHOWN]).decode("utf-8", "replace")
        notes.append(f"Your code printed {log.output_total} bytes; the first {len(shown)} characters:\n{shown}")
    if not isolated:
        notes.append("Note: graded without isolation (the grader did not run as root).")
    return "\n\n".join(notes)


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + " [...]"


def _give_to(folder: str, uid: int) -> None:
    """Make the submission's private copy the sandbox user's, and nobody else's."""
    for root, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(root, name), uid, uid)
    os.chown(folder, uid, uid)
    os.chmod(folder, 0o700)


def _write_json(path: str, data) -> None:
    with open(path + ".tmp", "w") as handle:
        json.dump(data, handle)
    os.replace(path + ".tmp", path)
