"""What students receive, checked as they receive it: the built handout zip and the student notebook.

    student_view_verdicts(handout_zip, notebook)    -> [(name, kind, expected, got, ok), ...]
    start_public_checks(handout_zip, folder)         then public_check_verdicts(runs) -> the same

- Nothing students read names a part the spec does not declare (a section, a `check(N)` cell, a docstring,
  the README of a course that dropped a part): each finding names the source file to edit.
- The public checks work in the unpacked handout, as a student runs them (nbgrader's validate and
  validate --invert): every one fails on the stubs as shipped, every one passes once the graded modules
  hold the reference.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile

from assignment.spec import SPEC, Spec
from autograder import consistency, stubs
from autograder.stubs import GRADED_MODULES
from grader.paths import MASTER_NOTEBOOK, REFERENCE_DIR, REPO

PUBLIC_CHECK_SECONDS = 600   # a safety net for one run of the public checks, not a budget
TEXT_SUFFIXES = (".py", ".md", ".txt", ".ipynb")


def source_of(name: str) -> str:
    """The file of the repository an instructor edits to change what the handout holds under `name`."""
    if name.startswith("student/") and name.removeprefix("student/") in GRADED_MODULES:
        return str((REFERENCE_DIR / name.removeprefix("student/")).relative_to(REPO))
    if name.endswith(".ipynb"):
        return str(MASTER_NOTEBOOK.relative_to(REPO))
    if "/" not in name:
        return f"handout/{name}"
    return name


def student_view(handout_zip: pathlib.Path, notebook: pathlib.Path, spec: Spec = SPEC) -> list[consistency.Problem]:
    """What students read, each finding named in the file to edit at its line there (a stub's in its reference)."""
    files, origins = {}, {}
    with zipfile.ZipFile(handout_zip) as zf:
        for name in (name for name in zf.namelist() if name.endswith(TEXT_SUFFIXES) and not name.endswith(".ipynb")):
            text, source = zf.read(name).decode("utf-8", "replace"), source_of(name)
            if (REPO / source).parent == REFERENCE_DIR:   # a stub, made from its reference
                reference = (REPO / source).read_text()
                if stubs.stub_source(reference, spec) == text:
                    origins[source] = stubs.reference_lines(reference, spec)
                else:   # a build older than the reference: its lines are the stub's own
                    source = name
            files[source] = text
    files[source_of(notebook.name)] = notebook.read_text()
    return consistency.student_view_problems(files, spec, origins)


def _start_public_checks(folder: pathlib.Path) -> subprocess.Popen:
    report = folder / "public-checks.xml"
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "student/tests", "-p", "no:cacheprovider", "-q", "-o", "addopts=",
         f"--junitxml={report}"],
        cwd=folder, env={**os.environ, "PYTHONPATH": str(folder), "PYTHONDONTWRITEBYTECODE": "1"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _outcomes(folder: pathlib.Path, proc: subprocess.Popen) -> tuple[int, int, str]:
    """(passed, total, pytest's last lines) of one run of the public checks."""
    try:
        output, _ = proc.communicate(timeout=PUBLIC_CHECK_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
    report = folder / "public-checks.xml"
    if not report.is_file():
        return 0, 0, output.strip().splitlines()[-1] if output.strip() else "no report"
    cases = list(ET.parse(report).getroot().iter("testcase"))
    passed = sum(not any(child.tag in ("failure", "error", "skipped") for child in case) for case in cases)
    tail = output.strip().splitlines()[-1] if output.strip() else ""
    return passed, len(cases), "; ".join(filter(None, [tail, _first_failure(cases)]))


def _first_failure(cases) -> str:
    """'student/tests/test_part3_heads.py::test_x: ImportError: ...' for the first check that failed or could not
    even be collected (a stale check that names a renamed function), so the verdict names the file to fix."""
    for case in cases:
        problem = next((child for child in case if child.tag in ("failure", "error")), None)
        if problem is None:
            continue
        module = case.get("classname") or case.get("name", "")   # a collection error names the module alone
        where = module.replace(".", "/") + ".py" + (f"::{case.get('name')}" if case.get("classname") else "")
        message = (problem.get("message") or problem.text or "").strip().splitlines()
        detail = next((line.removeprefix("E").strip() for line in (problem.text or "").splitlines()
                       if line.startswith("E ")), message[0] if message else "")
        return f"first failing: {where}: {detail[:200]}"
    return ""


def start_public_checks(handout_zip: pathlib.Path, folder: pathlib.Path) -> dict[pathlib.Path, subprocess.Popen]:
    """Unpack the handout twice (as shipped, and with the reference's graded modules) and start its public
    checks in both, side by side (the self-check grades meanwhile)."""
    shutil.rmtree(folder, ignore_errors=True)
    stubs, reference = folder / "as-shipped", folder / "with-reference"
    for target in (stubs, reference):
        with zipfile.ZipFile(handout_zip) as zf:
            zf.extractall(target)
    for module in GRADED_MODULES:
        shutil.copyfile(REFERENCE_DIR / module, reference / "student" / module)
    return {target: _start_public_checks(target) for target in (stubs, reference)}


def public_check_verdicts(runs: dict[pathlib.Path, subprocess.Popen]) -> list[tuple]:
    (stub_passed, stub_total, stub_tail), (ref_passed, ref_total, ref_tail) = (
        _outcomes(target, proc) for target, proc in runs.items())
    return [
        ("public checks on the stubs", "handout", "all fail", f"{stub_passed} of {stub_total} pass ({stub_tail})",
         stub_total > 0 and stub_passed == 0),
        ("public checks on the reference", "handout", "all pass", f"{ref_passed} of {ref_total} pass ({ref_tail})",
         ref_total > 0 and ref_passed == ref_total),
    ]


def student_view_verdicts(handout_zip: pathlib.Path, notebook: pathlib.Path, spec: Spec = SPEC) -> list[tuple]:
    found = student_view(handout_zip, notebook, spec)
    if not found:
        return [("what students read", "handout", "names only the spec's parts", "it does", True)]
    return [(problem.where, "handout", f"names only Parts {', '.join(map(str, spec.numbers))}", problem.what, False)
            for problem in found]
