"""A class larger than one machine (`--shard I/N`): shards run side by side into one output folder grade every
submission exactly once, write no gradebook of their own, and the run without --shard then grades nothing again
and writes the gradebook of the whole class, as one run would have."""
import subprocess
import sys

import pytest

from autograder.adversarial import read_rows
from autograder.samples import write_submission
from autograder.zoo.bugs import BUGS
from grader.paths import REPO
from grader.run import submissions

SAFETY_NET_S = 600   # a net for a hung run, never a budget: the suite passes at any load
CLASS = {"reference": None, "stubs": False, **{bug.name: bug.overrides for bug in BUGS[:4]}}


def test_every_submission_is_in_exactly_one_shard_whatever_the_class_holds(tmp_path):
    for name in ("a", "b", "c", "d", "e", "f", "g"):
        (tmp_path / name / "student").mkdir(parents=True)
    found = submissions.discover([tmp_path])
    for count in (1, 2, 3, 5):
        shares = [submissions.shard_of(found, (index, count)) for index in range(1, count + 1)]
        assert sorted(s.source for share in shares for s in share) == sorted(s.source for s in found)
        fewer = [s for s in found if s.name != "d"]   # a class without one of them splits the rest the same way
        assert [submissions.shard_of(fewer, (i, count)) for i in range(1, count + 1)] == \
            [[s for s in share if s.name != "d"] for share in shares]
    assert submissions.shard_of(found, None) == found


def grade(folder, out, *more):
    return subprocess.Popen([sys.executable, "-m", "autograder", "grade", str(folder), "--out", str(out),
                             "--workers", "1", "--no-similarity", *more], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_shards_side_by_side_grade_each_submission_once_and_the_run_without_a_shard_writes_the_gradebook(tmp_path):
    folder = tmp_path / "class-0"
    for name, files in CLASS.items():
        write_submission(folder / name, solution=files is not False, overrides=files or {})
    # The split goes by each submission's real path, and tmp_path differs from run to run: the class is moved until
    # both shards have work (6 submissions all land in one shard once in 32 paths).
    for attempt in range(1, 40):
        if all(submissions.shard_of(submissions.discover([folder]), (index, 2)) for index in (1, 2)):
            break
        folder = folder.rename(tmp_path / f"class-{attempt}")
    assert all(submissions.shard_of(submissions.discover([folder]), (index, 2)) for index in (1, 2))
    out = tmp_path / "out"
    shards = [grade(folder, out, "--shard", f"{index}/2") for index in (1, 2)]   # at the same time
    for shard in shards:
        stdout, stderr = shard.communicate(timeout=SAFETY_NET_S)
        assert shard.returncode == 0, stdout[-2000:] + stderr[-2000:]
        assert "once every shard has finished, run the same command without --shard" in stdout
    assert not (out / "grades.csv").exists()
    graded = {path.name: path.stat().st_mtime_ns for path in (out / "results").glob("*.json")}
    assert len(graded) == len(CLASS)
    whole = grade(folder, out)
    stdout, stderr = whole.communicate(timeout=SAFETY_NET_S)
    assert whole.returncode == 0, stderr[-2000:]
    assert {path.name: path.stat().st_mtime_ns for path in (out / "results").glob("*.json")} == graded   # none again
    assert f"resumed: 0 graded now, {len(CLASS)} kept from an earlier run" in stdout   # and it says so
    rows = read_rows(out)
    assert set(rows) == set(CLASS) and rows["reference"]["score"] == 100.0 and rows["stubs"]["score"] == 0.0
    assert all(rows[bug]["score"] < 100.0 for bug in CLASS if bug not in ("reference", "stubs"))
    assert (out / "tests.csv").exists()   # the class reports, over the whole class


def test_a_shard_refuses_what_acts_on_the_whole_class(tmp_path):
    write_submission(tmp_path / "one")
    proc = grade(tmp_path / "one", tmp_path / "out", "--shard", "1/2", "--regrade")
    _stdout, stderr = proc.communicate(timeout=SAFETY_NET_S)
    assert proc.returncode == 2 and "without --shard" in stderr
    proc = grade(tmp_path / "one", tmp_path / "out", "--shard", "3/2")
    _stdout, stderr = proc.communicate(timeout=SAFETY_NET_S)
    assert proc.returncode == 2 and "1 <= I <= N" in stderr
