"""Wires the hidden suite: the `student` fixture (the only door to student code) and its markers.

    pytest grading_tests --submission DIR [--results-json FILE]

grades the student/ package inside DIR in this process (trusted folders only). What the points are and
how the spec's rules apply is grader/suite.py's GradingPlugin; the grading engine registers its own,
with the sandbox gateway, and this file then adds none.
"""
from __future__ import annotations

import pytest
import torch

from grader.gateway import Gateway
from grader.gateway.local import LocalGateway
from grader.suite import PLUGIN_NAME, GradingPlugin, registered
from grading_tests import gates, second_opinions


def pytest_addoption(parser):
    group = parser.getgroup("grading")
    group.addoption("--submission", default=None, help="folder holding the student/ package to grade in-process")
    group.addoption("--results-json", default=None, help="write Gradescope results.json here")


def pytest_configure(config):
    config.addinivalue_line("markers", "part(n): the assignment part this test grades")
    config.addinivalue_line("markers", "weight(w): this test's share of its part's points (default 1)")
    config.addinivalue_line("markers", "gated(*names): runs only once each named function computes its basic case "
                                       "(grading_tests/gates.py)")
    config.addinivalue_line("markers", "second_opinion(case, *args): compares two answers, the second from a process "
                                       "that never saw the first (grading_tests/second_opinions.py)")
    if registered(config) is None:
        torch.set_num_threads(1)   # as the engine's processes and tests/conftest.py: more threads cost more CPU
        plugin = GradingPlugin(lambda config: LocalGateway(config.getoption("submission")),
                               config.getoption("results_json"))
        config.pluginmanager.register(plugin, PLUGIN_NAME)
    # The assertion text is the whole story (results.json carries only it); full tracebacks
    # would only slow a failing submission down. `--tb=short` still shows them.
    if getattr(config.option, "tbstyle", None) == "auto":
        config.option.tbstyle = "line"


@pytest.fixture(scope="session")
def student(pytestconfig) -> Gateway:
    return registered(pytestconfig).gateway(pytestconfig)


@pytest.fixture
def second_device(student) -> str:
    """The device the placement checks run student code on besides the CPU: a GPU where the student's code reaches
    one, else the device emulated on the CPU (placement.py). A test that runs student code there asks for it (the
    engine, grader/run/trusted.py, runs the tests that do last, by this name)."""
    return student.second_device


@pytest.fixture(autouse=True)
def gate(request, student) -> None:
    """A property test marked gated(...) fails, saying why, unless the functions it names compute (gates.py)."""
    marker = request.node.get_closest_marker("gated")
    if marker is not None:
        gates.require(student, *marker.args)


@pytest.fixture
def opinions(request, student, gate) -> second_opinions.Opinions:
    """The two answers of a test marked second_opinion(case, *args): second_opinions.py."""
    return second_opinions.answers(request, student)
