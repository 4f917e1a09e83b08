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
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from autograder import selfcheck
from autograder.adversarial import (
    Expectation,
    channels,
    escapes,
    ipc_objects_with_key,
    posix_queue_exists,
    processes_running,
    read_rows,
    remove_planted,
    result_files,
    verify,
    write_adversarial_zoo,
)
from grader.contain import cleanup, isolation, kernel
from grader.paths import REPO
from grader.scoring import PART_POINTS
from tests import grading_command
from tests.patience import SAFETY_NET_S
from tests.routes import outcomes

SLOW_FIXTURES = {"zoo"}   # tests.conftest marks the tests that use it slow

TIMEOUT = "5"   # CPU seconds per call: the zoo's infinite loops cost 2 x this each
MEMORY_GB = "2"   # per box: abuse-forked-children-fill-memory fills it per sandbox, well within TIMEOUT
as_root = pytest.mark.skipif(not kernel.privileged(), reason="a fresh user id per sandbox needs root")
ALL_LAYERS = isolation.Plan(held=isolation.LAYERS).line()   # as root, every layer of the table


def grade(*args, timeout: float = SAFETY_NET_S, layers_off: str = "") -> subprocess.CompletedProcess:
    """The batch command, with the zoo's secret in the grader's environment (for its reader of environments)."""
    return grading_command.grade(*args, env={channels.SECRET_VARIABLE: channels.SECRET}, layers_off=layers_off,
                                 timeout=timeout)


def clean_up_after(expectations: list[Expectation]) -> None:
    """A containment that failed (or was switched off) must not leave anything behind for the next test."""
    for expectation in expectations:
        for pid in processes_running(expectation.forbidden_process) if expectation.forbidden_process else []:
            os.kill(pid, signal.SIGKILL)
        if expectation.forbidden_ipc_key is not None:
            remove_ipc_objects(expectation.forbidden_ipc_key)
        if expectation.forbidden_queue:
            posix_queue_exists(expectation.forbidden_queue, remove=True)
        for path in expectation.forbidden_paths:
            if os.path.lexists(path) and not os.path.isdir(path):   # a file, a link, a socket (bind())
                os.unlink(path)


def remove_ipc_objects(key: int) -> None:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    for get, control in ((libc.shmget, libc.shmctl), (libc.msgget, libc.msgctl)):
        ident = get(key, 0, 0)
        if ident >= 0:
            control(ident, 0, None)   # IPC_RMID


@dataclass
class Batch:
    root: pathlib.Path
    out: pathlib.Path
    expectations: list[Expectation]
    proc: subprocess.CompletedProcess
    before: dict[str, list]     # sandbox users' leftovers of other runs before this batch

    def rows(self) -> dict[str, dict]:
        return read_rows(self.out)

    @property
    def submissions(self) -> list[Expectation]:
        """The expectations of the zoo's submissions: all but those of paths that hold none (absent)."""
        return [e for e in self.expectations if not e.absent]


@pytest.fixture(scope="module")
def zoo(tmp_path_factory) -> Batch:
    base = tmp_path_factory.mktemp("engine")
    root, out = base / "zoo", base / "out"
    expectations = write_adversarial_zoo(root)
    before = sandbox_users_leftovers(str(out))
    try:
        proc = grade(root, "--out", out, "--workers", "2", "--timeout", TIMEOUT, "--memory-gb", MEMORY_GB)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        yield Batch(root, out, expectations, proc, before)
    finally:
        clean_up_after(expectations)
        remove_planted(root)


def test_every_adversarial_submission_is_graded_as_expected(zoo):
    assert verify(zoo.expectations, zoo.out) == []


def test_the_batch_command_gives_the_reference_and_the_stubs_the_run_wide_batchs_scores_test_by_test(zoo, graded_zoo):
    """Graded among hostile submissions, by the checkout's command, as in the run-wide batch (the shipped engine)."""
    rows, results = zoo.rows(), selfcheck.read_results(zoo.out)
    for name in ("reference", "stubs"):
        assert rows[name]["status"] == "graded"
        assert outcomes(results[name]) == outcomes(graded_zoo.results[name])
    assert (rows["reference"]["score"], rows["stubs"]["score"]) == (100.0, 0.0)


def test_the_zoo_covers_every_family(zoo):
    kinds = {e.kind for e in zoo.expectations}
    assert {"control", "cheat", "abuse", "input"} <= kinds
    cheats = [e for e in zoo.expectations if e.kind == "cheat" and e.baseline is None and e.no_better_than is None]
    assert len(cheats) >= 6 and all(e.score == 0.0 for e in cheats)
    assert all(e.no_better_than in {x.name for x in zoo.expectations} for e in zoo.expectations if e.no_better_than)
    assert {e.status for e in zoo.expectations} == {"graded", "error", "timeout"}


def test_a_course_that_drops_a_part_expects_no_points_lost_in_it(tmp_path):
    import dataclasses

    from assignment.spec import SPEC
    from autograder import adversarial
    without_6 = dataclasses.replace(SPEC, parts=tuple(part for part in SPEC.parts if part.number != 6))
    names = {entry.expectation.name for entry in adversarial.entries(tmp_path, spec=without_6)}
    every = {entry.expectation.name for entry in adversarial.entries(tmp_path)}
    assert every - names == {"bug-fused-path-is-manual"}   # it could lose points only in Part 6
    assert "bug-sdpa-in-manual-path" in names   # it loses Part 5's too


def test_grades_csv_has_the_columns_and_one_row_per_submission(zoo):
    with open(zoo.out / "grades.csv", newline="") as handle:
        reader = csv.DictReader(handle)
        names = [row["submission"] for row in reader]
        columns = reader.fieldnames
    assert columns[:10] == ["name", "sid", "email", "submission_id", "group", "submission", "score", "max_score",
                            "status", "message"]
    assert [f"part{p}" for p in PART_POINTS] == [c for c in columns if c.startswith("part")]
    assert len(names) == len(zoo.submissions)
    assert sorted(zoo.rows()) == sorted(e.name for e in zoo.submissions)   # names quoted against formulas, unquoted
    for row in zoo.rows().values():
        assert row["status"] in ("graded", "error", "timeout")
        assert "\n" not in row["message"]
        assert row["max_score"] == 100.0
        assert abs(sum(row[f"part{p}"] for p in PART_POINTS) - row["score"]) < 1e-3


def test_results_files_follow_the_gradescope_schema(zoo):
    files = sorted((zoo.out / "results").glob("*.json"))
    assert sorted(result_files(zoo.out)) == sorted(e.name for e in zoo.submissions)
    assert len(files) == len(zoo.submissions)
    for path in files:
        document = json.loads(path.read_text())
        assert isinstance(document["score"], (int, float)), path
        assert document["visibility"] in ("visible", "hidden", "after_due_date", "after_published")
        assert isinstance(document["output"], str)
        for test in document["tests"]:
            assert {"name", "output", "visibility"} <= test.keys(), path
            assert 0 <= test.get("score", 0) <= test.get("max_score", 0), path
        graded = sum(test.get("score", 0) for test in document["tests"])
        assert round(graded, 6) == document["score"], path   # each test's share exact to 4 decimals


def test_an_error_row_explains_itself_in_the_feedback(zoo):
    document = json.loads(result_files(zoo.out)["input-traversal-zip"].read_text())
    assert document["score"] == 0 and "unsafe path" in document["output"]


def test_output_is_captured_and_truncated(zoo):
    document = json.loads(result_files(zoo.out)["abuse-print-100mb-in-scaled_scores"].read_text())
    printed = int(document["output"].split("Your code printed ")[1].split(" bytes")[0])
    assert printed >= 100 << 20                     # all of it was read (the call was not blocked) ...
    assert len(document["output"]) < 10_000          # ... and only the start was kept


def test_a_warning_torch_raises_in_student_code_shows_the_students_line_not_the_graders_files(graded_zoo):
    """`k.T` of a 3-D tensor makes torch warn from C++, at the innermost Python frame: the executor's watch around
    the call. The student reads the line of their own code that did it, as in their own run."""
    output = graded_zoo.results["bug-k.T-for-batches"]["output"]
    printed = output.split("Your code printed ", 1)[1]
    assert "student/scaling.py:" in printed and "return torch.matmul(q, k.T) * scale" in printed, printed[:600]
    assert "grader/" not in printed and "executor.py" not in printed, printed[:600]


def test_summary_png_is_a_picture(zoo):
    assert (zoo.out / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_command_prints_progress_a_table_flags_and_the_isolation(zoo):
    assert "ETA" in zoo.proc.stderr and f"{len(zoo.submissions)}/{len(zoo.submissions)}" in zoo.proc.stderr
    assert "graded" in zoo.proc.stdout and "submission" in zoo.proc.stdout
    assert "submission(s) flagged for a look" in zoo.proc.stdout
    assert f"isolation: {ALL_LAYERS}" in zoo.proc.stdout or not kernel.privileged()


def test_student_text_reaches_no_terminal_raw(zoo):
    for text in (zoo.proc.stdout, zoo.proc.stderr):
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text


@as_root
def test_every_row_says_which_layers_held_and_the_students_feedback_does_not(zoo):
    assert {row["isolation"] for row in zoo.rows().values()} == {ALL_LAYERS}
    document = json.loads(result_files(zoo.out)["reference"].read_text())
    assert document["extra_data"]["gradebook_row"]["isolation"] == ALL_LAYERS   # the grader's, in the results file
    assert "isolated" not in document["output"] and "landlock" not in document["output"]   # the machine's business


def test_the_flags_column_names_what_an_instructor_should_look_at(zoo):
    flags = {name: row["flags"] for name, row in zoo.rows().items()}
    assert flags["reference"] == "" and flags["stubs"] == ""
    assert "tampering with the sandbox" in flags["cheat-raw-frames"]
    assert "bytecode" in flags["cheat-solution-only-as-bytecode-zip"]
    assert "forbidden call" in flags["bug-sdpa-in-manual-path"]
    assert "sandbox saw" in flags["cheat-steal-reference"] or not kernel.privileged()


def test_hiding_a_forbidden_call_gains_nothing_over_calling_it_openly(zoo):
    """The open call costs the tests that ran it; code that switches a watch off is seen in its source (read as
    text on the trusted side), and then no test of the parts that run it (5 and 6 for multihead.py) earns points."""
    rows = zoo.rows()
    twin, cheat = rows["bug-sdpa-in-manual-path"], rows["cheat-sdpa-hidden-from-the-watch"]
    assert "forbidden call" in twin["flags"] and twin["score"] < rows["reference"]["score"] == 100.0
    assert "switches off the modes" in cheat["flags"] and cheat["score"] <= twin["score"]
    assert cheat["part5"] == cheat["part6"] == 0.0 and cheat["part1"] == rows["reference"]["part1"]


def sandbox_users_leftovers(mine: str) -> dict[str, list]:
    """Processes, System V IPC objects and files of sandbox users (uid >= UID_BASE). Other engines may be
    grading on this machine: processes count only if their command line names this batch (a sandbox is a fork
    of the batch command; an escaped process carries the zoo's marker), files only outside the sandbox folders
    of other runs."""
    first = isolation.UID_BASE
    processes = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if os.stat(f"/proc/{pid}").st_uid >= first and (mine in command or escapes.HOG_MARK in command):
                processes.append(f"{pid}: {command[:120]}")
        except OSError:
            continue
    ipc = [f"{found.kind} {found.ident} of uid {found.uid}" for found in cleanup.sysv_ipc_objects()
           if found.uid >= first]
    files = []
    for folder in cleanup.SHARED_WRITABLE:
        for root, dirs, names in os.walk(folder):
            dirs[:] = [d for d in dirs if not (root == "/tmp" and d.startswith("autograder-sandboxes-"))]
            for name in dirs + names:
                try:
                    if os.lstat(os.path.join(root, name)).st_uid >= first:
                        files.append(os.path.join(root, name))
                except OSError:
                    continue
    return {"processes": processes, "ipc": ipc, "files": files}


@as_root
def test_nothing_of_a_sandbox_user_is_left_anywhere(zoo):
    """After the batch: no process, no System V IPC object and no file in the shared folders of a sandbox user
    (beyond what other runs on this machine had left before it started)."""
    after = sandbox_users_leftovers(str(zoo.out))
    assert after["processes"] == []
    for kind in ("ipc", "files"):
        assert sorted(set(after[kind]) - set(zoo.before[kind])) == [], kind


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
    def unmeasured(rows):   # the memory the sandboxes held differs from run to run
        return {name: {k: v for k, v in row.items() if k != "peak_memory_mib"} for name, row in rows.items()}
    assert unmeasured(read_rows(out)) == unmeasured(zoo.rows())


# ---------------------------------------------------------------- the zoo's cheats are real

def _score_in_process(folder: pathlib.Path, scratch: pathlib.Path) -> float:
    """Grade with the hidden suite in the same process as the student's code (no engine)."""
    results = scratch / f"{folder.name}.json"
    subprocess.run([sys.executable, "-m", "pytest", "grading_tests", "--submission", str(folder),
                    "--results-json", str(results), "-q", "-p", "no:cacheprovider"],
                   cwd=REPO, capture_output=True, timeout=SAFETY_NET_S, env={**os.environ, "TMPDIR": str(scratch)})
    return json.loads(results.read_text())["score"]


def test_the_cheats_score_when_the_grader_shares_their_process(zoo, tmp_path):
    """Without the engine the same cheats do score: the zeros above are the engine's doing. (The bytecode
    zip is unpacked as it stands, .pyc included: the defence switched off.)"""
    bytecode = tmp_path / "bytecode-unpacked"
    with zipfile.ZipFile(zoo.root / "cheat-solution-only-as-bytecode-zip.zip") as archive:
        archive.extractall(bytecode)
    folders = {"cheat-patch-comparisons": zoo.root / "cheat-patch-comparisons",
               "cheat-oracle-hunt": zoo.root / "cheat-oracle-hunt", "cheat-solution-only-as-bytecode-zip": bytecode}
    if kernel.privileged():
        folders["cheat-steal-reference"] = zoo.root / "cheat-steal-reference"
    with ThreadPoolExecutor(2) as pool:
        scores = dict(zip(folders, pool.map(lambda folder: _score_in_process(folder, tmp_path), folders.values()),
                          strict=True))
    assert all(score > 0 for score in scores.values()), scores
    assert scores["cheat-solution-only-as-bytecode-zip"] == 100.0
    assert all(zoo.rows()[name]["score"] == 0.0 for name in folders)


# ---------------------------------------------------------------- the layers are what stops them

@as_root
def test_with_its_layer_switched_off_each_attack_succeeds(zoo, tmp_path):
    """The attacks whose defence is an isolation layer, graded again with that layer off (one batch): each
    now gets through. With the layers on (the zoo's batch above) none did."""
    chosen = [e for e in zoo.expectations if e.defence]
    off = ",".join(sorted({layer for e in chosen for layer in e.defence.split(",")}))
    assert set(off.split(",")) >= {"ipc", "landlock", "mnt"}
    baselines = sorted({e.baseline for e in chosen if e.baseline})
    try:
        proc = grade(*(zoo.root / name for name in [*baselines, *(e.name for e in chosen)]), "--out", tmp_path,
                     "--workers", "2", "--timeout", TIMEOUT, layers_off=off)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert all(f"no {layer} (switched off" in proc.stdout for layer in off.split(","))
        problems = verify(chosen, tmp_path)
        for expectation in chosen:
            assert any(p.startswith(expectation.name + ":") for p in problems), (expectation.name, problems)
        outlive = next(e for e in chosen if e.forbidden_ipc_key is not None)
        assert ipc_objects_with_key(outlive.forbidden_ipc_key) or posix_queue_exists(outlive.forbidden_queue)
    finally:
        clean_up_after(chosen)
