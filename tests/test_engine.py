"""The grading engine against the adversarial zoo: one batch (2 workers) holds every hostile
submission plus the reference and the stubs, and each must be graded exactly as
autograder/adversarial expects while the rest of the batch is unaffected.

The batch runs once (module-scoped fixture, `python -m autograder grade` in a child process);
the other tests read its output folder or grade a few of its submissions again.
"""
from __future__ import annotations

import csv
import json
import os
import pathlib
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from autograder.adversarial import Expectation, processes_running, read_rows, verify, write_adversarial_zoo
from autograder.engine import isolation
from autograder.paths import REPO
from grading_tests.scoring import PART_POINTS

pytestmark = pytest.mark.slow

TIMEOUT = "5"   # seconds per call: the zoo's infinite loops cost 2 x this each
as_root = pytest.mark.skipif(not isolation.privileged(), reason="isolation needs root (the engine says 'not isolated')")


def grade(*args, timeout: float = 600) -> subprocess.CompletedProcess:
    """python -m autograder grade ARGS, from the repository, as a grader runs it."""
    return subprocess.run([sys.executable, "-m", "autograder", "grade", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


@dataclass
class Batch:
    root: pathlib.Path
    out: pathlib.Path
    expectations: list[Expectation]
    proc: subprocess.CompletedProcess

    def rows(self) -> dict[str, dict]:
        return read_rows(self.out)


@pytest.fixture(scope="module")
def zoo(tmp_path_factory) -> Batch:
    base = tmp_path_factory.mktemp("engine")
    root, out = base / "zoo", base / "out"
    expectations = write_adversarial_zoo(root)
    proc = grade(root, "--out", out, "--workers", "2", "--timeout", TIMEOUT)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    yield Batch(root, out, expectations, proc)
    for expectation in expectations:   # a failed containment must not leave processes behind
        for pid in processes_running(expectation.forbidden_process) if expectation.forbidden_process else []:
            os.kill(pid, signal.SIGKILL)


def test_every_adversarial_submission_is_graded_as_expected(zoo):
    assert verify(zoo.expectations, zoo.out) == []


def test_the_reference_scores_100_and_the_stubs_0_in_the_same_batch(zoo):
    rows = zoo.rows()
    assert (rows["reference"]["score"], rows["reference"]["status"]) == (100.0, "graded")
    assert (rows["stubs"]["score"], rows["stubs"]["status"]) == (0.0, "graded")


def test_the_zoo_covers_every_family(zoo):
    kinds = {e.kind for e in zoo.expectations}
    assert {"control", "cheat", "abuse", "input"} <= kinds
    cheats = [e for e in zoo.expectations if e.kind == "cheat" and e.baseline is None]
    assert len(cheats) >= 6 and all(e.score == 0.0 for e in cheats)
    assert {e.status for e in zoo.expectations} == {"graded", "error", "timeout"}


def test_grades_csv_has_the_columns_and_one_row_per_submission(zoo):
    with open(zoo.out / "grades.csv", newline="") as handle:
        reader = csv.DictReader(handle)
        names = [row["submission"] for row in reader]
        columns = reader.fieldnames
    assert columns[:5] == ["submission", "score", "max_score", "status", "message"]
    assert [f"part{p}" for p in PART_POINTS] == [c for c in columns if c.startswith("part")]
    assert sorted(names) == sorted(e.name for e in zoo.expectations)
    for row in zoo.rows().values():
        assert row["status"] in ("graded", "error", "timeout")
        assert "\n" not in row["message"]
        assert row["max_score"] == 100.0
        assert abs(sum(row[f"part{p}"] for p in PART_POINTS) - row["score"]) < 1e-3


def test_results_files_follow_the_gradescope_schema(zoo):
    files = sorted((zoo.out / "results").glob("*.json"))
    assert [f.stem for f in files] == sorted(e.name for e in zoo.expectations)
    for path in files:
        document = json.loads(path.read_text())
        assert isinstance(document["score"], (int, float)), path
        assert document["visibility"] in ("visible", "hidden", "after_due_date", "after_published")
        assert isinstance(document["output"], str)
        for test in document["tests"]:
            assert {"name", "score", "max_score", "output", "visibility"} <= test.keys(), path
            assert 0 <= test["score"] <= test["max_score"] + 1e-9
        graded = sum(test["score"] for test in document["tests"])
        assert abs(graded - document["score"]) < 0.02, path   # each test rounded to 4 decimals


def test_an_error_row_explains_itself_in_the_feedback(zoo):
    document = json.loads((zoo.out / "results" / "input-traversal-zip.json").read_text())
    assert document["score"] == 0 and "unsafe path" in document["output"]


def test_output_is_captured_and_truncated(zoo):
    document = json.loads((zoo.out / "results" / "abuse-print-100mb-in-scaled_scores.json").read_text())
    printed = int(document["output"].split("Your code printed ")[1].split(" bytes")[0])
    assert printed >= 100 << 20                     # all of it was read (the call was not blocked) ...
    assert len(document["output"]) < 10_000          # ... and only the start was kept


def test_summary_png_is_a_picture(zoo):
    assert (zoo.out / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_command_prints_progress_a_table_and_the_isolation(zoo):
    assert "ETA" in zoo.proc.stderr and f"{len(zoo.expectations)}/{len(zoo.expectations)}" in zoo.proc.stderr
    assert "graded" in zoo.proc.stdout and "submission" in zoo.proc.stdout
    expected = "isolation: isolated" if isolation.privileged() else "isolation: not isolated"
    assert expected in zoo.proc.stdout


@as_root
def test_every_row_says_the_run_was_isolated(zoo):
    assert {row["isolation"] for row in zoo.rows().values()} == {"isolated"}


def test_the_same_scores_whatever_the_worker_count(zoo, tmp_path):
    names = ["reference", "bug-mask-on-default-device", "abuse-exit-in-expand_padding_mask",
             "abuse-mutate-input-in-split_heads", "cheat-patch-comparisons"]
    proc = grade(*(zoo.root / name for name in names), "--out", tmp_path, "--workers", "1", "--timeout", TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    alone, together = read_rows(tmp_path), zoo.rows()
    keys = ["score", "status", *(f"part{p}" for p in PART_POINTS)]
    assert {n: [alone[n][k] for k in keys] for n in names} == {n: [together[n][k] for k in keys] for n in names}


def test_a_rerun_grades_only_what_is_missing_or_failed_in_the_engine(zoo, tmp_path):
    out = tmp_path / "out"
    subprocess.run(["cp", "-a", str(zoo.out), str(out)], check=True)
    (out / "results" / "reference.json").unlink()
    (out / "grades.csv").unlink()
    failed = out / "results" / "stubs.json"   # as if the engine itself had crashed on it
    document = json.loads(failed.read_text())
    document["extra_data"]["gradebook_row"].update(status="error", message="grader error: test", engine_failure=True)
    failed.write_text(json.dumps(document))
    before = {p.name: p.stat().st_mtime_ns for p in (out / "results").iterdir() if p != failed}
    proc = grade(zoo.root, "--out", out, "--workers", "2", "--timeout", TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "2/2 (+" in proc.stderr                     # two graded now, the others counted as done before
    after = {p.name: p.stat().st_mtime_ns for p in (out / "results").iterdir()}
    assert after.keys() == before.keys() | {"reference.json", "stubs.json"}
    assert all(after[name] == mtime for name, mtime in before.items())
    assert read_rows(out) == zoo.rows()


# ---------------------------------------------------------------- the zoo's cheats are real

def _score_in_process(folder: pathlib.Path, scratch: pathlib.Path) -> float:
    """Grade with the hidden suite in the same process as the student's code (no engine)."""
    results = scratch / f"{folder.name}.json"
    subprocess.run([sys.executable, "-m", "pytest", "grading_tests", "--submission", str(folder),
                    "--results-json", str(results), "-q", "-p", "no:cacheprovider"],
                   cwd=REPO, capture_output=True, timeout=600, env={**os.environ, "TMPDIR": str(scratch)})
    return json.loads(results.read_text())["score"]


def test_the_cheats_score_when_the_grader_shares_their_process(zoo, tmp_path):
    """Without the engine the same cheats do score: the zeros above are the engine's doing."""
    cheats = ["cheat-patch-comparisons", "cheat-oracle-hunt"] + (["cheat-steal-reference"] if isolation.privileged() else [])
    with ThreadPoolExecutor(len(cheats)) as pool:
        scores = dict(zip(cheats, pool.map(lambda name: _score_in_process(zoo.root / name, tmp_path), cheats)))
    assert all(score > 0 for score in scores.values()), scores
    assert all(zoo.rows()[name]["score"] == 0.0 for name in cheats)
