"""Session fixtures: each expensive artefact is made once per test run and shared.

    dist         `python -m autograder build` run once: the notebook, the handout, autograder.zip
    graded_zoo   the reference, the stubs, every bug and every correct variant of autograder/zoo,
                 graded in one batch by the engine shipped in dist's autograder.zip (as the
                 self-check grades them), with each case's results.json

Tests that use them (marked automatically below), or that grade through the engine, otter or a
notebook kernel, carry the `slow` marker; `pytest -m "not slow"` is the inner loop.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import pytest

from autograder import build_cli, selfcheck
from autograder.paths import REPO

WORKERS = 2   # this project's CI machine has two cores
SLOW_FIXTURES = {"dist", "graded_zoo"}


def pytest_collection_modifyitems(items):
    """A test that needs the build or the graded zoo is slow, whether or not its module says so."""
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def dist(tmp_path_factory) -> pathlib.Path:
    """The folder of one build, made by the instructors' command."""
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "autograder", "build", "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "total" in proc.stdout
    return out


@dataclass(frozen=True)
class GradedZoo:
    cases: dict[str, selfcheck.Case]   # case name ("reference", "stubs", "bug-...", "variant-...") -> case
    results: dict[str, dict]           # case name -> its results.json (absent: the engine wrote none)
    out: pathlib.Path                  # the self-check's working folder (submissions/, grades/)

    def verdict(self, name: str) -> selfcheck.Verdict:
        """The self-check's own judgement of one case."""
        return selfcheck.judge(self.cases[name], self.results.get(name))


@pytest.fixture(scope="session")
def graded_zoo(dist, tmp_path_factory) -> GradedZoo:
    out = tmp_path_factory.mktemp("zoo")
    cases = {case.name: case for case in selfcheck.cases()}
    results = selfcheck.grade(list(cases.values()), build_cli.existing(dist).autograder, out, WORKERS)
    return GradedZoo(cases, results, out)


@pytest.fixture
def sandbox_root():
    """A folder for sandboxes' scratch, as a batch makes one (0711: they can enter their own, list nothing)."""
    folder = tempfile.mkdtemp(prefix="probe-test-")
    os.chmod(folder, 0o711)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
