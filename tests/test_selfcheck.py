"""python -m autograder selfcheck: passes on this checkout (every case of the zoo: the run-wide batch of
tests/conftest.py; the command itself, --quick, runs in tests/test_instructor_recipes.py), and fails, with a
non-zero exit, when a bug no longer costs points, a "correct" variant is wrong, or the handout leaks."""
import ast
import re
import shutil
import zipfile

import pytest

from autograder import selfcheck
from autograder.otter import leaks, packaging
from autograder.samples import reference_source
from autograder.zoo.bugs import BUGS


def test_the_selfcheck_passes_on_this_checkout(graded_zoo):
    """Every verdict of the self-check the run-wide batch was graded by: what students receive (the handout, its
    view, its public checks on the stubs and the reference) and every case of the zoo, bugs of every part."""
    failed = [v for v in graded_zoo.verdicts if not v.ok]
    assert failed == [], failed
    kinds = {v.kind for v in graded_zoo.verdicts}
    assert {"handout", "reference", "stubs", "bug", "variant"} <= kinds, kinds
    names = {v.name for v in graded_zoo.verdicts}
    assert {"attention-handout.zip", "public checks on the stubs", "public checks on the reference"} <= names
    assert {case.part for case in graded_zoo.cases.values() if case.kind == "bug"} == {1, 2, 3, 4, 5, 6}
    assert len([v for v in graded_zoo.verdicts if v.kind in ("reference", "stubs", "bug", "variant")]) == len(
        graded_zoo.cases)


def test_selfcheck_fails_when_a_bug_costs_nothing_or_a_variant_is_wrong(dist, tmp_path, monkeypatch, capsys):
    harmless = reference_source("scaling.py") + "\n# a comment changes nothing\n"
    wrong_variant = next(bug for bug in BUGS if bug.name == "no-scale")
    monkeypatch.setattr(selfcheck, "trials", lambda quick: [
        selfcheck.Trial("reference", "reference", {}),
        selfcheck.Trial("bug-harmless", "bug", {"scaling.py": harmless}, part=1),
        selfcheck.Trial("variant-not-really", "variant", wrong_variant.overrides),
    ])
    assert selfcheck.main(["--out", str(tmp_path), "--quick", "--dist", str(dist)]) == 1
    table = capsys.readouterr().out
    verdicts = {line.split()[0]: line for line in table.splitlines()
                if line.startswith(("reference", "bug-", "variant-"))}
    assert "  ok  " in verdicts["reference"]
    assert "FAIL" in verdicts["bug-harmless"] and "part 1: 10" in verdicts["bug-harmless"]
    assert "FAIL" in verdicts["variant-not-really"]
    assert "5 passed, 2 failed" in table   # what students get (the handout, its view, its checks) and the reference



def leaking_handout(folder, readme: str):
    """A copy of handout/ whose README says something it must not."""
    shutil.copytree(packaging.HANDOUT_DIR, folder)
    (folder / "README.md").write_text(readme)
    return folder


@pytest.mark.slow
def test_selfcheck_fails_when_the_handout_would_leak(tmp_path, monkeypatch):
    hidden = sorted(leaks.hidden_test_names())[0]
    readme = f"Hint: the grader runs {hidden}.\n"
    monkeypatch.setattr(packaging, "HANDOUT_DIR", leaking_handout(tmp_path / "leaking-handout", readme))
    verdicts = selfcheck.selfcheck(tmp_path, quick=True)
    assert [(v.name, v.ok) for v in verdicts] == [("build", False)]
    assert "leak" in verdicts[0].got


def test_handout_verdict_names_a_planted_leak(tmp_path):
    handout = tmp_path / "handout.zip"
    with zipfile.ZipFile(handout, "w") as zf:
        zf.writestr("student/scaling.py", reference_source("scaling.py"))
    verdict = selfcheck.check_handout(handout)
    assert not verdict.ok and "BEGIN SOLUTION" in verdict.got


def row(status="graded", score=100.0, **parts):
    points = {f"part{p}": parts.get(f"part{p}", most) for p, most in selfcheck.PART_POINTS.items()}
    return {"score": score, "tests": [], "extra_data": {"gradebook_row": {"status": status, "message": "", **points}}}


@pytest.mark.parametrize("case, results, ok", [
    (selfcheck.Trial("r", "reference", {}), row(), True),
    (selfcheck.Trial("r", "reference", {}), row(score=99.5, part1=9.5), False),
    (selfcheck.Trial("s", "stubs", None), row(score=0.0), True),
    (selfcheck.Trial("s", "stubs", None), row(score=0.5), False),
    (selfcheck.Trial("b", "bug", {}, part=3), row(score=95.0, part3=5.0), True),
    (selfcheck.Trial("b", "bug", {}, part=3), row(score=95.0, part4=5.0), False),   # lost points, in another part
    (selfcheck.Trial("b", "bug", {}, part=3), row(status="error", score=0.0), False),
    (selfcheck.Trial("v", "variant", {}), None, False),
])
def test_judge(case, results, ok):
    assert selfcheck.judge(case, results).ok is ok


def test_quick_cases_cover_every_part_once():
    chosen = selfcheck.trials(quick=True)
    bugs = [c for c in chosen if c.kind == "bug"]
    assert sorted(c.part for c in bugs) == [1, 2, 3, 4, 5, 6]
    assert len(selfcheck.trials()) == 2 + len(BUGS) + len(selfcheck.VARIANTS)


def test_a_public_check_that_fails_is_named_with_its_file():
    """A stale check (it imports a renamed function) used to read "0 of 1 pass (1 error)", naming no file."""
    import xml.etree.ElementTree as ET

    from autograder import handout_check
    report = ET.fromstring(
        '<testsuites><testsuite><testcase classname="student.tests.test_part1_scaling" name="test_ok"/>'
        '<testcase classname="" name="student.tests.test_part3_heads"><error message="collection failure">'
        "E   ImportError: cannot import name 'splt_heads' from 'student'</error></testcase>"
        '<testcase classname="student.tests.test_part4_padding" name="test_mask"><failure message="AssertionError: '
        'wrong">long traceback</failure></testcase></testsuite></testsuites>')
    cases = list(report.iter("testcase"))
    assert handout_check._first_failure(cases) == ("first failing: student/tests/test_part3_heads.py: ImportError: "
                                                   "cannot import name 'splt_heads' from 'student'")
    assert handout_check._first_failure(cases[2:]) == ("first failing: student/tests/test_part4_padding.py::test_mask: "
                                                       "AssertionError: wrong")
    assert handout_check._first_failure(cases[:1]) == ""


def test_what_students_read_is_named_at_the_line_the_instructor_edits(tmp_path):
    """Once Part 6 is dropped, every sentence still about it is named in the file to edit at the line that holds
    it: a graded module's by its line in assignment/reference/, not in the stub generated from it (issue 49: the
    self-check sent the instructor to the stub's lines 109 and 100 where the reference holds the sentences on 134
    and 146). Given code whose docstring still says how the grader checks it is named at each such line."""
    import dataclasses

    from assignment.spec import SPEC
    from autograder import handout_check, stubs
    from grader.paths import REFERENCE_DIR, REPO

    def student_view(spec, edited=""):
        handout = tmp_path / "attention-handout.zip"
        with zipfile.ZipFile(handout, "w") as zf:
            zf.writestr("student/multihead.py", stubs.stub_source(reference_source("multihead.py"), spec) + edited)
        (tmp_path / "attention.ipynb").write_text('{"cells": []}')
        return handout_check.student_view(handout, tmp_path / "attention.ipynb", spec)

    assert student_view(SPEC) == []
    without_6 = dataclasses.replace(SPEC, parts=tuple(p for p in SPEC.parts if p.number != 6))
    found = student_view(without_6)
    kinds = ("names Part 6", "says how the grader checks it")
    assert {kind for problem in found for kind in kinds if kind in problem.what} == set(kinds), found
    for problem in found:
        name, line = problem.where.split(":")
        assert name == str((REFERENCE_DIR / "multihead.py").relative_to(REPO))
        quoted = ast.literal_eval(re.search(r": (['\"].*)$", problem.what).group(1))
        assert quoted in (REFERENCE_DIR / "multihead.py").read_text().splitlines()[int(line) - 1], problem
    # A stub the reference does not make (a build older than it) is named as shipped, at its own lines.
    assert {p.where.split(":")[0] for p in student_view(without_6, edited="# by hand\n")} == {"student/multihead.py"}
