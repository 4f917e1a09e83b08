"""The grading command's own behaviour on small batches: layouts it accepts, a run killed half way,
bad command lines. (The adversarial zoo is in test_engine.py.)"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile

import pytest

from autograder.adversarial import processes_running, read_rows
from autograder.examples import zip_folder
from autograder.samples import write_submission
from grader.run import submissions, unpacking
from tests.patience import SAFETY_NET_S
from tests.test_engine import REPO, grade

GRADESCOPE_METADATA = """\
submission_1001:
  :submitters:
  - :name: Ada Lovelace
    :email: ada@example.edu
    :sid: '1'
  :created_at: 2026-01-10 10:00:00 +0000
  :score: 0.0
submission_1002:
  :submitters:
  - :name: Alan Turing
    :email: alan@example.edu
  - :name: Grace Hopper
    :email: grace@example.edu
  :created_at: 2026-01-10 11:00:00 +0000
"""


@pytest.mark.slow
def test_a_gradescope_export_is_graded_and_named_by_student(tmp_path):
    export = tmp_path / "export"
    write_submission(export / "submission_1001")
    write_submission(export / "submission_1002", solution=False)
    (export / "submission_metadata.yml").write_text(GRADESCOPE_METADATA)
    proc = grade(export, "--out", tmp_path / "out", "--workers", "2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = read_rows(tmp_path / "out")
    assert {name: row["score"] for name, row in rows.items()} == {"Ada Lovelace": 100.0,
                                                                  "Alan Turing & Grace Hopper": 0.0}
    assert sorted(p.name for p in (tmp_path / "out" / "results").iterdir()) == [
        "Ada_Lovelace.json", "Alan_Turing_Grace_Hopper.json"]


@pytest.mark.slow
def test_a_missing_path_exits_2_and_says_which(tmp_path):
    proc = grade(tmp_path / "nowhere", "--out", tmp_path / "out", timeout=SAFETY_NET_S)
    assert proc.returncode == 2
    assert "nowhere: no such file or folder" in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_bad_limits_are_refused(tmp_path):
    proc = grade(tmp_path, "--out", tmp_path / "out", "--workers", "0", timeout=SAFETY_NET_S)
    assert proc.returncode == 2 and "must be positive" in proc.stderr


@pytest.mark.slow
def test_a_run_killed_half_way_is_finished_by_the_next_run(tmp_path):
    class_dir = tmp_path / "class"
    for i in range(4):
        write_submission(class_dir / f"student{i}", solution=i == 0)
    init = class_dir / "student1" / "student" / "__init__.py"
    init.write_text("import time\n\ntime.sleep(60)\n" + init.read_text())   # still grading when the kill comes
    out = tmp_path / "out"
    command = [sys.executable, "-m", "autograder", "grade", str(class_dir), "--out", str(out), "--workers", "1",
               "--timeout", "120"]
    first = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    deadline = time.monotonic() + 300
    while not list((out / "results").glob("*.json")) and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.05)
    os.killpg(first.pid, signal.SIGKILL)   # the command's process group (workers have groups of their own)
    first.wait()
    gone = time.monotonic() + 10
    while processes_running(" ".join(command)) and time.monotonic() < gone:
        time.sleep(0.1)
    assert not processes_running(" ".join(command)), "grading processes outlived the killed command"
    graded_before = {p.name: p.stat().st_mtime_ns for p in (out / "results").glob("*.json")}
    assert 1 <= len(graded_before) < 4, "kill it half way: after the first result, before the last"
    proc = grade(class_dir, "--out", out, "--workers", "2", "--timeout", "2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = read_rows(out)
    assert {name: (row["score"], row["status"]) for name, row in rows.items()} == {
        "student0": (100.0, "graded"), "student1": (0.0, "timeout"), "student2": (0.0, "graded"),
        "student3": (0.0, "graded")}
    assert all((out / "results" / name).stat().st_mtime_ns == mtime for name, mtime in graded_before.items())
    assert not [p for p in (out / "results").iterdir() if p.suffix != ".json"]   # no half-written file counts


@pytest.mark.slow
def test_the_pictures_are_drawn_for_a_class_not_for_one_row(tmp_path):
    class_dir, out = tmp_path / "class", tmp_path / "out"
    write_submission(class_dir / "alice", solution=False)
    out.mkdir()
    (out / "summary.png").write_bytes(b"a picture of an earlier class")   # it would show rows that are gone
    alone = grade(class_dir / "alice", "--out", out)
    assert alone.returncode == 0, alone.stderr[-2000:]
    assert not (out / "summary.png").exists() and not (out / "tests.png").exists()
    assert "no pictures for a gradebook of one row" in alone.stdout and (out / "tests.csv").is_file()
    write_submission(class_dir / "bob", solution=False)
    both = grade(class_dir, "--out", out)
    assert both.returncode == 0, both.stderr[-2000:]
    assert all((out / name).read_bytes().startswith(b"\x89PNG") for name in ("summary.png", "tests.png"))


# ---------------------------------------------------------------- finding and unpacking (no grading)

def test_each_child_of_a_folder_is_a_submission_named_by_its_file(tmp_path):
    write_submission(tmp_path / "class" / "alice")
    zip_folder(write_submission(tmp_path / "bob-src"), tmp_path / "class" / "bob.zip")
    (tmp_path / "class" / ".DS_Store").write_text("")
    found = submissions.discover([tmp_path / "class", tmp_path / "bob-src"])
    assert [(s.name, s.slug) for s in found] == [("alice", "alice"), ("bob", "bob"), ("bob-src", "bob-src")]


def test_a_zip_with_the_package_inside_one_folder_unpacks(tmp_path):
    archive = zip_folder(write_submission(tmp_path / "src"), tmp_path / "work.zip", top="my-work")
    private = tmp_path / "private"
    private.mkdir()
    unpacking.unpack(str(archive), str(private))
    assert (private / "student" / "__init__.py").is_file()
    assert sorted(p.name for p in private.iterdir()) == ["student"]


def test_a_package_folders_deep_unpacks_and_two_are_refused_by_name(tmp_path):
    deep = tmp_path / "upload"
    write_submission(deep / "course" / "week 3")   # upload/course/week 3/student/
    (deep / "notes.pdf").write_text("not code")
    private = tmp_path / "private"
    private.mkdir()
    unpacking.unpack(str(deep), str(private))
    assert (private / "student" / "__init__.py").is_file()
    write_submission(deep / "course" / "old copy")
    with pytest.raises(unpacking.SubmissionError, match=r"2 student/ packages found \(course/old copy/student, "
                                                          r"course/week 3/student\): upload only the one to grade"):
        unpacking.unpack(str(deep), str(tmp_path / "again"))


def test_a_folder_holding_one_zip_unpacks(tmp_path):
    (tmp_path / "upload").mkdir()
    zip_folder(write_submission(tmp_path / "src"), tmp_path / "upload" / "submission.zip")
    private = tmp_path / "private"
    private.mkdir()
    unpacking.unpack(str(tmp_path / "upload"), str(private))
    assert (private / "student" / "heads.py").is_file()


@pytest.mark.parametrize("name, why", [("../evil.py", "unsafe path"), ("/etc/evil.py", "unsafe path"),
                                       ("C:/evil.py", "unsafe path"), ("student/../../evil.py", "unsafe path")])
def test_unsafe_zip_paths_are_refused_before_anything_is_written(tmp_path, name, why):
    archive = tmp_path / "bad.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("student/__init__.py", "")
        handle.writestr(name, "print('escaped')")
    private = tmp_path / "deep" / "private"
    private.mkdir(parents=True)
    with pytest.raises(unpacking.SubmissionError, match=why):
        unpacking.unpack(str(archive), str(private))
    assert not (tmp_path / "deep" / "evil.py").exists() and not (tmp_path / "evil.py").exists()


def test_a_zip_whose_header_lies_about_its_size_is_cut_off(tmp_path, monkeypatch):
    monkeypatch.setattr(unpacking, "MAX_FILE_BYTES", 1000)
    archive = tmp_path / "liar.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as handle:
        handle.writestr("student/__init__.py", "")
        handle.writestr("student/blob.bin", bytes(5000))
    with zipfile.ZipFile(archive) as handle:   # what the header claims: small enough
        assert handle.getinfo("student/blob.bin").file_size == 5000
    data = archive.read_bytes().replace((5000).to_bytes(4, "little"), (500).to_bytes(4, "little"))
    archive.write_bytes(data)
    private = tmp_path / "private"
    private.mkdir()
    with pytest.raises(unpacking.SubmissionError, match=r"blob\.bin"):
        unpacking.unpack(str(archive), str(private))
    assert all(p.stat().st_size <= 1000 for p in private.rglob("*") if p.is_file())



def test_closing_paths_leaves_shared_scratch_folders_open(tmp_path):
    from grader.contain import permissions
    shared, private = tmp_path / "scratch", tmp_path / "class"
    shared.mkdir(mode=0o1777)
    private.mkdir(mode=0o755)
    os.chmod(shared, 0o1777)   # as /tmp: closing it would lock every other user out
    os.chmod(private, 0o755)
    for path in (shared, private):
        permissions.hide_from_others(path)
    assert (shared.stat().st_mode & 0o7777, private.stat().st_mode & 0o7777) == (0o1777, 0o750)


SLOW_SPLIT_HEADS = '''
    import time
    until = time.process_time() + 0.05   # correct, only slow: 50 ms of CPU time on every call
    while time.process_time() < until:
        pass
'''


@pytest.mark.slow
def test_a_submission_stopped_at_its_budget_keeps_what_it_earned_and_names_what_did_not_run(tmp_path):
    """Issue 29, class 0: the budget ends the grading of a correct but slow submission part way. The tests run
    before keep their points, and every test begun after says it was not run, not that the code is wrong."""
    folder = tmp_path / "class" / "slow"
    write_submission(folder, solution=True)
    heads = folder / "student" / "heads.py"
    text = heads.read_text()
    body = text.index('"""', text.index('"""', text.index("def split_heads")) + 3) + 3
    heads.write_text(text[:body] + SLOW_SPLIT_HEADS + text[body:])
    proc = grade(str(tmp_path / "class"), "--out", str(tmp_path / "out"), "--budget", "3")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    row = read_rows(tmp_path / "out")["slow"]
    assert row["status"] == "timeout" and "the points earned before are kept" in row["message"], row
    assert 0 < row["score"] < 100 and row["part1"] > 0, row
    results = json.loads((tmp_path / "out" / "results" / "slow.json").read_text())
    unrun = [test for test in results["tests"] if test.get("output", "").startswith("not run (0 points)")]
    assert unrun and all(test["score"] == 0 for test in unrun)
    assert all("time budget" in test["output"] for test in unrun)
