"""Wires the hidden suite: the `student` fixture (the only door to student code) and the points.

    pytest grading_tests --submission DIR [--results-json FILE]

grades the student/ package inside DIR in this process (trusted folders only).
The grading engine installs its sandbox gateway with set_gateway_factory instead.
"""
from __future__ import annotations

import json

import pytest

from grading_tests import gateway as gateway_module
from grading_tests.scoring import TestOutcome, gradescope_results, score_outcomes

_gateway_factory = None


def set_gateway_factory(factory):
    """Let the engine replace the in-process gateway (factory(config) -> Gateway)."""
    global _gateway_factory
    _gateway_factory = factory


def pytest_addoption(parser):
    group = parser.getgroup("grading")
    group.addoption("--submission", default=None, help="folder holding the student/ package to grade in-process")
    group.addoption("--results-json", default=None, help="write Gradescope results.json here")


def pytest_configure(config):
    config.addinivalue_line("markers", "part(n): the assignment part this test grades")
    config.addinivalue_line("markers", "weight(w): this test's share of its part's points (default 1)")
    config.addinivalue_line("markers", "second_device: runs student code on a second device (a GPU, or PyTorch's "
                                       "meta device standing in for one)")
    config.pluginmanager.register(PointsRecorder(config), "attention-points")
    # The assertion text is the whole story (results.json carries only it); full tracebacks
    # would only slow a failing submission down. `--tb=short` still shows them.
    if config.option.tbstyle == "auto":
        config.option.tbstyle = "line"


@pytest.fixture(scope="session")
def student(pytestconfig) -> gateway_module.Gateway:
    if _gateway_factory is not None:
        return _gateway_factory(pytestconfig)
    return gateway_module.LocalGateway(pytestconfig.getoption("submission"))


def pytest_collection_modifyitems(items):
    missing = [item.nodeid for item in items if item.get_closest_marker("part") is None]
    if missing:
        raise pytest.UsageError(f"grading tests without a part marker: {missing[:5]}")


class PointsRecorder:
    """Collects one TestOutcome per test and writes results.json at the end."""

    def __init__(self, config):
        self.config = config
        self.outcomes: dict[str, TestOutcome] = {}

    def pytest_runtest_logreport(self, report):
        item_marks = self._marks.get(report.nodeid)
        if item_marks is None:
            return
        part, weight = item_marks
        name = report.nodeid.split("::", 1)[-1]
        outcome = self.outcomes.setdefault(report.nodeid, TestOutcome(name, part, weight, "passed"))
        if report.skipped and report.when in ("setup", "call"):
            outcome.status, outcome.message = "skipped", _skip_reason(report)
        elif report.failed and outcome.status != "failed":
            outcome.status, outcome.message = "failed", _short_failure(report)

    @property
    def _marks(self):
        return getattr(self, "_marks_by_id", {})

    def pytest_collection_modifyitems(self, items):
        self._position = {item.nodeid: index for index, item in enumerate(items)}   # results keep this order
        self._marks_by_id = {
            item.nodeid: (item.get_closest_marker("part").args[0],
                          (item.get_closest_marker("weight").args[0] if item.get_closest_marker("weight") else 1))
            for item in items if item.get_closest_marker("part")
        }

    def report(self):
        position = getattr(self, "_position", {})
        ordered = sorted(self.outcomes.items(), key=lambda pair: position.get(pair[0], len(position)))
        return score_outcomes([outcome for _nodeid, outcome in ordered])

    def pytest_sessionfinish(self, session):
        path = self.config.getoption("results_json")
        if path:
            with open(path, "w") as handle:
                json.dump(gradescope_results(self.report()), handle, indent=1)


def _skip_reason(report) -> str:
    """pytest.skip's reason as given (pytest's longrepr prefixes it with "Skipped: ")."""
    reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
    return reason.removeprefix("Skipped: ")


def _short_failure(report) -> str:
    """The assertion's message (or the student's error), not a traceback full of hidden values."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    for prefix in ("AssertionError: ", "grading_tests.gateway.StudentError: "):
        text = text.removeprefix(prefix)
    return text
