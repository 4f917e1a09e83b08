"""The README's main job: the bundled example class grades into a gradebook with one row each."""
import csv
import json
import os
import subprocess
import sys

import pytest

from autograder.examples import write_examples
from grader.paths import REPO
from tests.patience import SAFETY_NET_S

EXPECTED = {   # name -> (status, score or None for "between 0 and 100")
    "alice": ("graded", 100.0), "bob": ("graded", None), "carol": ("graded", 0.0), "dave": ("graded", 100.0),
    "erin": ("graded", None), "grace": ("error", 0.0),
    # scaling.py does not compile, and masking.py and multihead.py import it: Parts 3 and 4 are graded.
    "frank": ("graded", 20.0),
}


@pytest.mark.slow   # runs the instructors' command in a child process
def test_the_example_class_grades_into_a_gradebook(tmp_path, monkeypatch, capsys):
    write_examples(tmp_path / "class")
    out = tmp_path / "gradebook"
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(tmp_path / "class"), "--out", str(out),
                           "--workers", "2"], capture_output=True, text=True, timeout=SAFETY_NET_S,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = {row["submission"]: row for row in csv.DictReader((out / "grades.csv").open())}
    assert set(rows) == set(EXPECTED)
    for name, (status, score) in EXPECTED.items():
        assert rows[name]["status"] == status, rows[name]
        if score is None:
            assert 0 < float(rows[name]["score"]) < 100, rows[name]
        else:
            assert float(rows[name]["score"]) == score, rows[name]
    assert "expected ':'" in rows["frank"]["message"] and "scaling.py" in rows["frank"]["message"]
    assert "not a readable zip" in rows["grace"]["message"]
    assert float(rows["bob"]["part1"]) < 10 and float(rows["erin"]["part2"]) < 30
    feedback = json.loads((out / "results" / "bob.json").read_text())
    assert any("1/sqrt(E)" in test["output"] for test in feedback["tests"])
    assert (out / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The class's similarity report, written by default by the grade command (not by the runtime's batch).
    assert (out / "similarity.csv").read_text().startswith("first,second,similarity,")
    assert (out / "similarity.html").read_text().startswith("<!doctype html>")
    assert "similarity:" in proc.stdout
    families: dict[str, set] = {}   # what the README says of it: the edits of the one reference are one family
    for pair in csv.DictReader((out / "similarity.csv").open()):
        families.setdefault(pair["family"], set()).update((pair["first"], pair["second"]))
    assert list(families.values()) == [{"alice", "bob", "dave", "erin", "frank"}]
    # Issue 49: the same command again grades nothing, says so, and never starts the template (torch's import).
    from autograder import __main__ as command_line
    from grader.run import template_boot

    def never():
        raise AssertionError("a run that grades nothing started the grading template")

    monkeypatch.setattr(template_boot, "start", never)
    capsys.readouterr()
    assert command_line.main(["grade", str(tmp_path / "class"), "--out", str(out), "--workers", "2"]) == 0
    again = capsys.readouterr().out
    assert f"resumed: 0 graded now, 7 kept from an earlier run in {out}" in again
    assert "resumed:" not in proc.stdout, "a first run is no resume"
    assert "similarity: 10 pair(s)" in again, again[-1500:]   # the family of five, reused
