"""How the hidden suite is graded: a pytest plugin that owns the gateway, the points and the spec's rules.

    GradingPlugin(gateway_factory, results_json=None)

grading_tests/conftest.py registers one with LocalGateway for an in-process run on a trusted folder; the
engine (grader/run/trusted.py) hands pytest its own, with the sandbox gateway. Either way the plugin
- gives the suite its `student` fixture (the conftest asks the plugin for the gateway);
- grades only the parts the spec declares: a test without a part marker stops the run, a test of a part
  the spec does not declare (a part the course dropped) is deselected;
- records one TestOutcome per test, in the suite's order, and scores them (grader/scoring.py); a test
  begun after the gateway stopped calling (the submission's budget ran out) says that it was not run; in the
  engine (skips_at_collection) a test that a skipif of a plain True skips is recorded at collection, with the
  outcome and message pytest's setup would give it;
- applies the spec's forbidden_calls rule: with "cost", a test during which the gateway saw a forbidden
  path (a manual path calling torch's fused attention, a fused path never calling it) earns nothing, and
  its feedback says why; with "flag", the flag alone tells the instructor.
The engine imports nothing of grading_tests: the suite and the engine meet only through this plugin.
"""
from __future__ import annotations

import json

import pytest

from assignment.spec import SPEC, Spec
from grader.gateway import Gateway
from grader.sanitize import valid_text
from grader.scoring import ScoreSheet, TestOutcome, gradescope_results, score_outcomes

PLUGIN_NAME = "attention-grading"
# The type names of errors that pytest prefixes to a failure's message, which the student does not need.
MESSAGE_PREFIXES = ("AssertionError: ", "grader.gateway.StudentError: ")


class GradingPlugin:
    def __init__(self, gateway_factory, results_json: str | None = None, spec: Spec = SPEC, *,
                 skips_at_collection: bool = False):
        self.gateway_factory = gateway_factory
        # The engine's: a test that a skipif mark of a plain True skips (the CUDA tests on a machine without a GPU)
        # is recorded skipped, with the mark's reason, as pytest would at its setup, and not run through pytest's
        # setup at all (144 tests: a tenth of a second of every submission's grading).
        self.skips_at_collection = skips_at_collection
        self.results_json = results_json
        self.spec = spec
        self.gateways: list[Gateway] = []
        self.outcomes: dict[str, TestOutcome] = {}
        self._marks: dict[str, tuple[int, float]] = {}
        self._position: dict[str, int] = {}
        self._unrun: dict[str, str] = {}   # tests that began after the submission was stopped -> why

    def gateway(self, config) -> Gateway:
        """The `student` fixture's gateway (one per session)."""
        self.gateways.append(self.gateway_factory(config))
        return self.gateways[-1]

    # ---------------------------------------------------------------- collection
    def pytest_collection_modifyitems(self, session, config, items):
        unmarked = [item.nodeid for item in items if item.get_closest_marker("part") is None]
        if unmarked:
            raise pytest.UsageError(f"grading tests without a part marker: {unmarked[:5]}")
        dropped = [item for item in items if _part(item) not in self.spec.numbers]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [item for item in items if _part(item) in self.spec.numbers]
        self._position = {item.nodeid: index for index, item in enumerate(items)}   # results keep this order
        self._marks = {item.nodeid: (_part(item), _weight(item)) for item in items}
        if self.skips_at_collection:
            settled = {item.nodeid: reason for item in items if (reason := _certain_skip(item)) is not None}
            for nodeid, reason in settled.items():
                self.outcomes[nodeid] = self._outcome(nodeid, "skipped", reason)
            if settled:
                config.hook.pytest_deselected(items=[item for item in items if item.nodeid in settled])
                items[:] = [item for item in items if item.nodeid not in settled]

    # ---------------------------------------------------------------- running
    def pytest_runtest_setup(self, item):
        for gateway in self.gateways:
            gateway.test = item.nodeid
            if gateway.stopped:
                self._unrun[item.nodeid] = gateway.stopped

    def pytest_runtest_logreport(self, report):
        if report.nodeid not in self._marks:
            return
        for gateway in self.gateways:
            gateway.test = report.nodeid   # the fixture's gateway may have been made during this test's setup
        outcome = self.outcomes.setdefault(report.nodeid, self._outcome(report.nodeid, "passed"))
        if report.skipped and report.when in ("setup", "call"):
            outcome.status, outcome.message = "skipped", _skip_reason(report)
        elif report.failed and outcome.status != "failed":
            outcome.status, outcome.message = "failed", _short_failure(report)
            if report.nodeid in self._unrun:   # whatever the test said, its student code never ran
                outcome.message = f"not run (0 points): {self._unrun[report.nodeid]}; the points earned before are kept"

    def _outcome(self, nodeid: str, status: str, message: str = "") -> TestOutcome:
        """A collected test's outcome, named as the results name it, with its part and weight."""
        return TestOutcome(nodeid.split("::", 1)[-1], *self._marks[nodeid], status, message)

    # ---------------------------------------------------------------- the result
    def forbidden(self) -> dict[str, str]:
        """Test id -> why its path broke the forbidden-call rule (every gateway of the session), or why the rule
        cannot be checked there (a test of a part that runs code switching the rule's watches off)."""
        found: dict[str, str] = {}
        for gateway in self.gateways:
            for test, why in gateway.forbidden.items():
                found.setdefault(test, why)
            for test, (part, _weight) in self._marks.items():   # the watches may have been blind there
                if part in gateway.hiding_parts:
                    found.setdefault(test, gateway.hiding)
        return found

    def report(self) -> ScoreSheet:
        ordered = sorted(self.outcomes.items(), key=lambda pair: self._position.get(pair[0], len(self._position)))
        if self.spec.settings.forbidden_calls == "cost":
            broken = self.forbidden()
            for nodeid, outcome in ordered:
                if nodeid in broken and outcome.status == "passed":
                    outcome.status = "failed"
                    outcome.message = (f"{broken[nodeid]}: this test earns no points (the result was right, the "
                                       f"path was not; your instructor sees it flagged)")
        return score_outcomes([outcome for _nodeid, outcome in ordered])

    def flags(self) -> list[str]:
        return [flag for gateway in self.gateways for flag in gateway.flags]

    def pytest_sessionfinish(self, session):
        if self.results_json:
            with open(self.results_json, "w") as handle:
                json.dump(valid_text(gradescope_results(self.report())), handle, indent=1)


def registered(config) -> GradingPlugin | None:
    """The session's GradingPlugin (the engine's, or the one the suite's conftest registered)."""
    return next((plugin for plugin in config.pluginmanager.get_plugins() if isinstance(plugin, GradingPlugin)), None)


def _part(item) -> int:
    return item.get_closest_marker("part").args[0]


def _weight(item) -> float:
    marker = item.get_closest_marker("weight")
    return marker.args[0] if marker else 1


def _certain_skip(item) -> str | None:
    """The reason pytest's setup would skip item for, where its skipif marks decide it from plain booleans (pytest
    takes the first mark whose condition holds); None where a mark's condition is anything else, or none holds."""
    for mark in item.iter_markers("skipif"):
        conditions, reason = mark.args or (mark.kwargs.get("condition"),), mark.kwargs.get("reason")
        if not all(isinstance(condition, bool) for condition in conditions) or not isinstance(reason, str):
            return None   # pytest's own evaluation decides
        if any(conditions):
            return reason
    return None


def _skip_reason(report) -> str:
    """pytest.skip's reason as given (pytest's longrepr prefixes it with "Skipped: ")."""
    reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
    return reason.removeprefix("Skipped: ")


def _short_failure(report) -> str:
    """The assertion's message (or the student's error), not a traceback full of hidden values."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    for prefix in MESSAGE_PREFIXES:
        text = text.removeprefix(prefix)
    return text
