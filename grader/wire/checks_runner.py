"""Runs the handout's public checks inside the sandbox: pytest, in this process, on the imported submission.

The trusted side asks for it (a ChecksRequest naming the check files) before the hidden suite, in a sandbox of
their own, where the course shows the public checks on Gradescope (grader/run/public_checks.py). The checks are
the instructor's copies, which the worker put in the submission's student/tests/ (read-only here); pytest reads
them and writes nothing (no cache, no bytecode, output captured in memory). What comes back is each check's node
id and its outcome in words: plain data, which code running here could forge, so the trusted side keeps it only
for node ids it knows and gives it no points.
"""
from __future__ import annotations

import os

import pytest

PASSED = "passed"
FAILED = "failed"
MESSAGE_CHARS = 1500
# pytest as the sandbox runs it: no configuration but ours (an ini file in the upload is not read), no plugins from
# the environment, no cache, no log file, no files at all, the output captured in memory (file-descriptor capture
# writes temporary files), one line of traceback per failure.
PYTEST_ARGS = ["-q", "--no-header", "-c", os.devnull, "-o", "addopts=", "-p", "no:cacheprovider",
               "-p", "no:faulthandler", "-p", "no:logging", "--capture=sys", "--tb=line", "-W", "ignore"]


class _Outcomes:
    """pytest plugin: node id -> "passed", or "failed: <why>" (a failing set-up or an unloadable file too)."""

    def __init__(self):
        self.outcomes: dict[str, str] = {}

    def pytest_collectreport(self, report):
        if report.failed:
            self.outcomes[report.nodeid] = f"{FAILED}: {_why(report)}"

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.outcomes.setdefault(report.nodeid, f"{FAILED}: {_why(report)}")
        elif report.when == "call" and report.passed:
            self.outcomes.setdefault(report.nodeid, PASSED)


def _why(report) -> str:
    """The failure's last line (the assertion's message), as the student's `python -m student.check` words it."""
    text = getattr(report.longrepr, "reprcrash", None)
    text = text.message if text is not None else str(report.longrepr)
    return text.strip()[:MESSAGE_CHARS]


def run(submission: str, files: list[str]) -> dict[str, str]:
    """Run student/tests/<file> for each of files (plain names) in the submission folder, with the submission's
    student package as already imported; node ids are relative to the submission folder."""
    tests = os.path.join(submission, "student", "tests")
    paths = [os.path.join(tests, name) for name in files if name == os.path.basename(name)]
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    collected = _Outcomes()
    pytest.main([*paths, *PYTEST_ARGS, f"--rootdir={submission}", f"--confcutdir={tests}"], plugins=[collected])
    return collected.outcomes
