"""The handout's public checks on Gradescope: run on the uploaded code, shown to the student at once, worth no points.

Otter's convention is that a student sees the public tests' results as soon as an upload is graded, and so learns
at once whether what was uploaded is what passed at home (`python -m student.check`). The course's setting
public_checks (assignment.toml) says whether Gradescope runs them; the batch command runs them only when told
(--public-checks: the Gradescope runtime tells it), so a class's batch pays nothing for them.

    install(package)                       the instructor's copies into an unpacked submission's student/
    run(spawner, limits, ...)              Gradescope's entries: one per known check, visible, 0 points

They run with the instructor's copies (which autograder.zip ships), never the student's, in a sandbox of their own
that starts before any hidden call (checks_runner.py runs pytest there). What that sandbox says is kept only for
the checks known here, read from the instructor's files as text, and earns nothing: a forged report could mislead
only its own author. Where the sandboxes can read the grader's files, the checks are not run: their words, shown
at once, could carry the hidden tests.
"""
from __future__ import annotations

import ast
import dataclasses
import pathlib
import re
import shutil

from assignment.spec import SPEC, Spec
from grader.contain.limits import Limits
from grader.gateway import StudentError
from grader.gateway.client import SandboxGateway, SessionLog, Spawner
from grader.paths import STUDENT_DIR
from grader.sanitize import printable
from grader.scoring import PUBLIC_CHECK_TAG, clip_message
from grader.wire.checks_runner import FAILED, PASSED

CHECKS_DIR = STUDENT_DIR / "tests"
# What the checks import beside student/tests/: the handout's table of parts (their conftest's markers).
SUPPORT = ("parts.py",)
FILE_PART = re.compile(r"test_part(\d+)_\w+\.py")
NODE_FOLDER = "student/tests"                 # node ids are relative to the submission folder
PARAMETERS = re.compile(r"\[[\w.=-]{1,40}\]", re.ASCII)   # a parametrized check's id, as pytest writes plain ones
MOST_PER_CHECK = 8                             # parametrized ids kept per check function
TITLE = "Public check"
NOT_RUN = "did not run (the checks stopped before it)"
UNGUARDED = ("not run on this grader: its sandboxes can read the grader's files, and what the checks say is "
             "shown to you at once")


def check_files(spec: Spec = SPEC) -> dict[pathlib.Path, int]:
    """The instructor's public check files of the spec's parts (a dropped part's are not run) -> their part."""
    found = {path: FILE_PART.fullmatch(path.name) for path in sorted(CHECKS_DIR.glob("test_part*_*.py"))}
    return {path: int(match.group(1)) for path, match in found.items()
            if match is not None and int(match.group(1)) in spec.numbers}


def known(spec: Spec = SPEC) -> dict[str, int]:
    """Each check's node id (without parameters) -> its part, in the files' order, read from them as text."""
    checks = {}
    for path, part in check_files(spec).items():
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                checks[f"{NODE_FOLDER}/{path.name}::{node.name}"] = part
    return checks


def install(package: pathlib.Path) -> None:
    """Replace whatever the upload has in student/tests/ (and the support it imports) with the instructor's copies,
    whatever kind of entry it put there: the checks that run are the handout's, whatever the student changed."""
    _remove(package / "tests")
    shutil.copytree(CHECKS_DIR, package / "tests",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"))
    for name in SUPPORT:
        _remove(package / name)
        shutil.copyfile(STUDENT_DIR / name, package / name)


def _remove(path: pathlib.Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def limits_for(limits: Limits, spec: Spec = SPEC) -> Limits:
    """The public checks' own limits: one call's time per call they may take (all files at once, then each file
    alone), in all, CPU and load-free time apart, as the submission's budget bounds the hidden suite. The worker
    adds this budget to the time after which it stops a submission's grading."""
    return dataclasses.replace(limits, budget=(len(check_files(spec)) + 1) * limits.call_timeout)


def run(spawner: Spawner, limits: Limits, log: SessionLog, *, words_shown: bool, spec: Spec = SPEC) -> list[dict]:
    """Run the checks in a sandbox of their own, within one call's limits (where that ends in a timeout or a crash,
    each file within one call's limits), all within limits_for(limits); Gradescope's entries for them.
    log: where what the sandboxes did is noted (their tripwires, refusals: the instructor's flags).
    words_shown: whether a sandbox's words may be shown (isolation.Plan.hides_the_graders_files)."""
    checks = known(spec)
    if not checks:
        return []
    if not words_shown:
        return not_run(UNGUARDED, checks)
    files = [path.name for path in check_files(spec)]
    gateway = SandboxGateway(spawner, limits_for(limits, spec), log)
    try:
        try:   # all in one call (each pytest session costs a fifth of a second) ...
            outcomes = gateway.public_checks(files)
        except StudentError:   # ... and where that ends badly, one call per file: one that spins costs only its own
            outcomes = {}
            for name in files:
                ours = f"{NODE_FOLDER}/{name}"
                try:
                    said = gateway.public_checks([name])
                except StudentError as error:
                    outcomes[ours] = f"{FAILED}: not run: {error.type_name}: {error.message}"
                    continue
                outcomes.update((node, text) for node, text in said.items()
                                if node == ours or node.startswith(ours + "::"))   # what it says of this file only
    finally:
        gateway.close()
    return entries(outcomes, checks)


def entries(outcomes: dict[str, str], checks: dict[str, int]) -> list[dict]:
    """One entry per known check (per parameter set for a parametrized one), in the files' order. An outcome of a
    node id not known here is dropped; a file that could not be loaded fails each of its checks."""
    ids: dict[str, list[str]] = {check: [] for check in checks}
    for node in outcomes:   # one pass, however many a sandbox reports
        check = node.partition("[")[0]
        if check in ids and len(ids[check]) < MOST_PER_CHECK and (node == check or PARAMETERS.fullmatch(
                node[len(check):])):
            ids[check].append(node)
    found = []
    for check, part in checks.items():
        file_failure = outcomes.get(check.split("::")[0], "")
        for node in ids[check] or [check]:
            said = outcomes.get(node) or file_failure or f"{FAILED}: {NOT_RUN}"
            found.append(_entry(part, node.split("::")[1], said))
    return found


def not_run(why: str, checks: dict[str, int]) -> list[dict]:
    return [_entry(part, check.split("::")[1], f"{FAILED}: {why}") for check, part in checks.items()]


def _entry(part: int, name: str, said: str) -> dict:
    passed = said == PASSED
    why = said.removeprefix(f"{FAILED}:").strip().removeprefix("AssertionError: ")
    return {"name": f"{TITLE} (Part {part}, no points): {printable(name)}", "tags": [PUBLIC_CHECK_TAG, f"part{part}"],
            "score": 0.0, "max_score": 0.0, "status": "passed" if passed else "failed",
            "output": "Passed." if passed else clip_message(printable(why or "failed", newlines=True)),
            "visibility": "visible"}
