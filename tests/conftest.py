"""Session fixtures: each expensive artefact is made once per test run and shared.

    dist         `python -m autograder build` run once: the notebook, the handout, autograder.zip
    graded_zoo   the self-check of this checkout on dist's build, with every case of autograder/zoo (the
                 reference, the stubs, every bug and every correct variant) graded in one batch by the
                 engine shipped in dist's autograder.zip: the run-wide batch that the tests of each
                 delivery route (the batch command, Gradescope's harness, `otter run`) compare with, test
                 by test; each case's results.json, and every verdict of the self-check (what students
                 receive, the handout's public checks, the cases)
    gradescope_reference
                 the reference's upload graded by Gradescope's harness, emulated (dist's autograder.zip):
                 the Gradescope route's end-to-end case, which the harness's and otter's tests share

Tests that use them or a module's own SLOW_FIXTURES (marked automatically below), or that grade through the
engine, otter or a notebook kernel (marked one by one), carry the `slow` marker; `pytest -m "not slow"` is the
inner loop.

Under pytest-xdist (`-n 2`, the README's command) each is still made once per run: the first worker to
need it makes it in the run's shared temporary folder, under a file lock; the others wait and read it.

Every process of the run computes on one thread (OMP_NUM_THREADS, inherited by each Python the tests start): the
run already keeps every core busy (two workers, and batches that grade two submissions at once), and torch's own
threads would only contend with them (test_cuda_tolerance.py alone: 13.6 CPU-s on two threads against 8.7 on
one, for 4% less wall time). The engine's template sets one thread for the grading processes anyway.
"""
from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"   # before torch starts its pool (this module, or any test's, imports torch)

import dataclasses
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import pytest
from filelock import FileLock

from autograder import selfcheck
from autograder.otter import harness
from autograder.samples import write_submission
from grader.paths import REPO
from tests.patience import SAFETY_NET_S
from tests.routes import submit

WORKERS = 2   # this project's CI machine has two cores
SLOW_FIXTURES = {"dist", "graded_zoo", "gradescope_reference"}


def pytest_collection_modifyitems(items):
    """A test that needs the build, the graded zoo or one of its module's SLOW_FIXTURES (module fixtures that grade,
    build or run a kernel) is slow, whether or not it is marked so; the module's other tests stay in the inner loop.
    The files that hold a slow test come first, so that under -n 2 the quick files fill the end (docs/testing.md)."""
    for item in items:
        slow = SLOW_FIXTURES | set(getattr(getattr(item, "module", None), "SLOW_FIXTURES", ()))
        if slow & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    with_slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in with_slow)   # stable: the collection's order otherwise


def made_once(tmp_path_factory, worker_id: str, name: str, make) -> pathlib.Path:
    """The folder `name`, filled by make(folder) once per test run, whichever xdist worker asks first (the others
    wait on its lock). A make that failed leaves no mark: each worker that asks tries again, and fails alike."""
    base = tmp_path_factory.getbasetemp()
    shared = base if worker_id == "master" else base.parent   # an xdist worker's folder is in the run's
    folder, done = shared / name, shared / f"{name}.done"
    with FileLock(str(shared / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder


def build(out: pathlib.Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "autograder", "build", "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "total" in proc.stdout


@pytest.fixture(scope="session")
def dist(tmp_path_factory, worker_id) -> pathlib.Path:
    """The folder of one build, made by the instructors' command."""
    return made_once(tmp_path_factory, worker_id, "dist", build)


@dataclass(frozen=True)
class GradedZoo:
    cases: dict[str, selfcheck.Trial]   # case name ("reference", "stubs", "bug-...", "variant-...") -> case
    results: dict[str, dict]           # case name -> its results.json (absent: the engine wrote none)
    out: pathlib.Path                  # the self-check's working folder (submissions/, grades/)
    verdicts: list[selfcheck.Verdict]  # the self-check's, in its order: the handout's first, then the cases'

    def verdict(self, name: str) -> selfcheck.Verdict:
        """The self-check's own judgement of one case."""
        return selfcheck.judge(self.cases[name], self.results.get(name))


VERDICTS = "verdicts.json"


def check_whole_zoo(dist: pathlib.Path, out: pathlib.Path) -> None:
    """The self-check, every case of the zoo chosen (the adversarial zoo is tests/test_engine.py's); its verdicts
    kept in out for every worker."""
    verdicts = selfcheck.selfcheck(out, chosen=selfcheck.trials(), workers=WORKERS, dist=dist)
    (out / VERDICTS).write_text(json.dumps([dataclasses.astuple(v) for v in verdicts]))


@pytest.fixture(scope="session")
def graded_zoo(dist, tmp_path_factory, worker_id) -> GradedZoo:
    cases = {case.name: case for case in selfcheck.trials()}
    out = made_once(tmp_path_factory, worker_id, "zoo", lambda out: check_whole_zoo(dist, out))
    verdicts = [selfcheck.Verdict(*fields) for fields in json.loads((out / VERDICTS).read_text())]
    return GradedZoo(cases, selfcheck.read_results(out / "grades"), out, verdicts)


RUN_FACTS = "run.json"


def grade_reference_on_gradescope(dist: pathlib.Path, out: pathlib.Path) -> None:
    upload = submit(write_submission(out / "reference"), out / "reference.zip")
    run = harness.run(dist / "autograder.zip", upload, out / "run")
    (out / RUN_FACTS).write_text(json.dumps({"returncode": run.returncode, "seconds": run.seconds}))


@pytest.fixture(scope="session")
def gradescope_reference(dist, tmp_path_factory, worker_id) -> harness.Run:
    out = made_once(tmp_path_factory, worker_id, "gradescope-reference",
                    lambda out: grade_reference_on_gradescope(dist, out))
    facts, root = json.loads((out / RUN_FACTS).read_text()), out / "run" / "autograder"
    results = root / "results" / "results.json"
    return harness.Run(facts["returncode"], json.loads(results.read_text()) if results.is_file() else None,
                       (root / "results" / "stdout").read_text(), facts["seconds"], root)


@pytest.fixture
def sandbox_root():
    """A folder for sandboxes' scratch, as a batch makes one (0711: they can enter their own, list nothing)."""
    folder = tempfile.mkdtemp(prefix="probe-test-")
    os.chmod(folder, 0o711)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
