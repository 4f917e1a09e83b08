"""The handout's public checks on Gradescope (grader/run/public_checks.py): run on the uploaded code with the
instructor's copies, shown to the student at once, worth no points, and agreeing check by check with what the
student's own run of them says at home. What the sandbox reports is kept only for checks the grader knows: a
forged report names nothing else and earns nothing; a check file that spins costs only its own checks.

The reference goes through Gradescope's harness (the session's `gradescope_reference`); the other uploads through
the batch command with --public-checks, which is what the harness runs."""
import json
import pathlib
import re
import subprocess
import sys

import pytest

from autograder.samples import edited_reference, reference_source, write_submission
from grader.contain import isolation
from grader.contain.limits import Limits
from grader.gateway.client import SessionLog
from grader.paths import REPO
from grader.run import public_checks, worker
from grader.run.run_settings import RunSettings
from grader.scoring import is_public_check
from grader.wire.checks_runner import FAILED, PASSED
from tests.grading_command import grade
from tests.patience import SAFETY_NET_S
from tests.routes import outcomes

SLOW_FIXTURES = {"graded"}
CAUSAL = "    return torch.ones(L, S, dtype=torch.bool, device=device).tril()"
# Patches pytest in the sandbox before the checks run: every run "collects" a check of its own invention, another
# with a parameter id pytest never writes, and nothing else; and it looks for the grader's files meanwhile.
FORGER = f'''
import sys as _sys
_pytest = _sys.modules.get("pytest")
if _pytest is not None:
    def _forged(args=None, plugins=()):
        try:
            __import__("os").listdir({str(REPO / "grading_tests")!r})
        except OSError:
            pass
        for plugin in plugins or ():
            for path in [str(a) for a in args or () if str(a).endswith(".py")]:
                node = "student/tests/" + path.rsplit("/", 1)[1]
                plugin.outcomes[node + "::test_forged_full_marks"] = "passed"
                plugin.outcomes[node + "::test_unscaled_scores_are_plain_dot_products[FULL MARKS]"] = "passed"
        return 0
    _pytest.main = _forged
'''
SPIN = "    while True:\n        pass\n"
HIDDEN = REPO / "grading_tests" / "test_part1_scaling.py"
# Reads a hidden test file in the sandbox and reports its text as a public check's failure, which students read
# at once: the channel the public checks would open where a sandbox can read the grader's files.
LEAKER = f'''
import sys as _sys
_pytest = _sys.modules.get("pytest")
if _pytest is not None:
    def _leak(args=None, plugins=()):
        try:
            with open({str(HIDDEN)!r}) as handle:
                said = handle.read()[:400]
        except OSError as error:
            said = "refused: " + type(error).__name__
        for plugin in plugins or ():
            for path in [str(a) for a in args or () if str(a).endswith(".py")]:
                node = "student/tests/" + path.rsplit("/", 1)[1]
                plugin.outcomes[node + "::test_unscaled_scores_are_plain_dot_products"] = "failed: " + said
        return 0
    _pytest.main = _leak
'''


def stubs_with(folder: pathlib.Path, code: str) -> pathlib.Path:
    """The stubs, with `code` at the end of the package's __init__.py (FORGER, LEAKER)."""
    write_submission(folder, solution=False)
    init = folder / "student" / "__init__.py"
    init.write_text(init.read_text() + code)
    return folder


def uploads(root: pathlib.Path) -> pathlib.Path:
    """A folder of submissions: a planted mistake, the stubs with the student's own checks (and pytest configuration)
    made to pass, a forger, a leaker, and the reference with a padding_mask that spins."""
    write_submission(root / "inverted-causal-mask",
                     overrides=edited_reference("masking.py", CAUSAL, CAUSAL.replace(".tril()", ".triu(diagonal=1)")))
    edited = write_submission(root / "edited-checks", solution=False)
    for check in (edited / "student" / "tests").glob("test_part*.py"):
        check.write_text("def test_made_to_pass():\n    assert True\n")
    (edited / "student" / "tests" / "test_part1_scaling.py").write_text("def test_own_full_marks():\n    pass\n")
    # pytest's configuration of its own, above the checks: an ini file that collects nothing, a conftest that skips.
    (edited / "student" / "pytest.ini").write_text("[pytest]\npython_functions = nothing_at_all\n")
    (edited / "student" / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef _skip():\n    pytest.skip('own conftest')\n")
    stubs_with(root / "forger", FORGER)
    stubs_with(root / "leaker", LEAKER)
    source = reference_source("masking.py")
    head, tail = source.split("def padding_mask(")
    write_submission(root / "spins", overrides={"masking.py": head + "def padding_mask(" + tail.replace(
        '    """\n', '    """\n' + SPIN, 1)})
    return root


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict[str, dict]:
    root = tmp_path_factory.mktemp("public-checks")
    out = root / "out"
    # One CPU second a call: the spinning upload's strikes and its spinning check files cost a second each.
    proc = grade(uploads(root / "uploads"), "--out", out, "--public-checks", "--timeout", "1", "--workers", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {path.stem: json.loads(path.read_text()) for path in (out / "results").glob("*.json")}


def checks_of(results: dict) -> dict[str, dict]:
    """The public checks' entries by check name (parameters included)."""
    return {entry["name"].split(": ", 1)[1]: entry for entry in results["tests"] if is_public_check(entry)}


def pytest_in(folder: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    """pytest as a student runs it in their submission folder (their package importable, nothing else of ours)."""
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=folder,
                          capture_output=True, text=True, timeout=SAFETY_NET_S,
                          env={"PYTHONPATH": str(folder), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"})


def at_home(folder: pathlib.Path) -> dict[str, str]:
    """Check name -> "passed" or "failed", as the student's own pytest run of the handout's checks says it."""
    proc = pytest_in(folder, "student/tests", "-q", "-rA", "-o", "addopts=")
    found = re.findall(r"^(PASSED|FAILED) student/tests/\S+::(\S+)", proc.stdout, re.MULTILINE)
    assert found, proc.stdout + proc.stderr
    return {name: word.lower() for word, name in found}


def test_the_reference_passes_every_public_check_at_once_for_no_points(gradescope_reference):
    results = gradescope_reference.results
    checks = checks_of(results)
    assert {name.split("[")[0] for name in checks} == {node.split("::")[1] for node in public_checks.known()}
    assert {(e["status"], e["score"], e["max_score"], e["visibility"]) for e in checks.values()} == \
        {("passed", 0.0, 0.0, "visible")}
    assert f"{len(checks)} of the handout's {len(checks)} public checks" in results["output"]


def test_the_hidden_suite_grades_as_it_does_without_the_public_checks(gradescope_reference, graded_zoo):
    assert outcomes(gradescope_reference.results) == outcomes(graded_zoo.results["reference"])
    assert any(is_public_check(entry) for entry in gradescope_reference.results["tests"])


def test_each_public_check_says_on_gradescope_what_it_says_at_home(graded, tmp_path):
    folder = write_submission(tmp_path / "inverted-causal-mask",
                              overrides=edited_reference("masking.py", CAUSAL,
                                                         CAUSAL.replace(".tril()", ".triu(diagonal=1)")))
    shown = checks_of(graded["inverted-causal-mask"])
    assert {name: entry["status"] for name, entry in shown.items()} == at_home(folder)
    inverted = shown["test_causal_mask_is_a_lower_triangular_bool_tensor"]
    assert "inverted mask" in inverted["output"] and inverted["visibility"] == "visible"


def test_the_instructors_copies_run_whatever_the_upload_did_to_its_own_or_to_pytest(graded):
    shown = checks_of(graded["edited-checks"])
    assert {name.split("[")[0] for name in shown} == {node.split("::")[1] for node in public_checks.known()}
    assert {entry["status"] for entry in shown.values()} == {"failed"}
    assert all("not implemented yet" in entry["output"] for entry in shown.values())


def test_a_forged_report_names_no_check_the_grader_does_not_know_and_earns_nothing(graded):
    results, known = graded["forger"], {node.split("::")[1] for node in public_checks.known()}
    shown = checks_of(results)
    assert set(shown) == known, "only the known checks, each once"
    assert results["score"] == 0.0 and sum(entry["max_score"] for entry in shown.values()) == 0.0


def test_what_the_public_checks_sandbox_tried_is_flagged_for_the_instructor(graded):
    flags = graded["forger"]["extra_data"]["flags"]
    assert any(flag.startswith("in the public checks: sandbox saw") and "grading_tests" in flag for flag in flags), \
        flags


def leaked(results: dict) -> str:
    """What the leaker's check said on Gradescope, once it is shown that no check shows the hidden file's text."""
    shown = checks_of(results)
    hidden_line = HIDDEN.read_text().splitlines()[0].strip('"')
    assert hidden_line and not any(hidden_line[:40] in entry["output"] for entry in shown.values())
    return shown["test_unscaled_scores_are_plain_dot_products"]["output"]


def test_a_check_that_reads_the_hidden_tests_shows_nothing_of_them(graded):
    said = leaked(graded["leaker"])
    assert said.startswith("refused: "), said   # denied, or not there in the box's own mounts


@pytest.mark.slow
def test_where_no_layer_keeps_the_hidden_tests_from_a_check_no_check_runs(tmp_path):
    proc = grade(stubs_with(tmp_path / "leaker", LEAKER), "--out", tmp_path / "out", "--public-checks",
                 "--workers", "1", layers_off="landlock,mnt,uid")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert leaked(json.loads((tmp_path / "out" / "results" / "leaker.json").read_text())) == public_checks.UNGUARDED


def test_a_check_file_that_spins_costs_only_its_own_checks(graded):
    shown = checks_of(graded["spins"])
    part = {name: entry["tags"][1] for name, entry in shown.items()}
    timed_out = {name for name, entry in shown.items() if "not run: Timeout" in entry["output"]}
    assert {part[name] for name in timed_out} >= {"part2"}
    assert {entry["status"] for name, entry in shown.items() if part[name] in ("part1", "part3")} == {"passed"}


# ---------------------------------------------------------------- what the trusted side keeps

KNOWN = {"student/tests/test_part1_scaling.py::test_a": 1, "student/tests/test_part1_scaling.py::test_b": 1,
         "student/tests/test_part2_masking.py::test_c": 2}


def test_only_known_checks_and_plain_parameter_ids_are_kept_and_none_earns_a_point():
    said = {"student/tests/test_part1_scaling.py::test_a": PASSED,
            "student/tests/test_part1_scaling.py::test_b[True]": PASSED,
            "student/tests/test_part1_scaling.py::test_b[a b]": PASSED,        # pytest writes no space in an id
            "student/tests/test_part1_scaling.py::test_unknown": PASSED,
            "student/tests/test_part9_extra.py::test_c": PASSED,
            "student/tests/test_part2_masking.py::test_c": "anything else"}    # not "passed": failed, in its words
    shown = {entry["name"].split(": ", 1)[1]: entry for entry in public_checks.entries(said, KNOWN)}
    assert list(shown) == ["test_a", "test_b[True]", "test_c"]
    assert [entry["status"] for entry in shown.values()] == ["passed", "passed", "failed"]
    assert shown["test_c"]["output"] == "anything else"
    assert {(entry["score"], entry["max_score"], entry["visibility"]) for entry in shown.values()} == \
        {(0.0, 0.0, "visible")}


def test_at_most_a_few_parameter_sets_are_kept_per_check():
    said = {f"student/tests/test_part1_scaling.py::test_a[{n}]": PASSED for n in range(50)}
    shown = public_checks.entries(said, KNOWN)
    assert sum("test_a[" in entry["name"] for entry in shown) == public_checks.MOST_PER_CHECK


def test_a_file_that_could_not_load_fails_each_of_its_checks_and_an_unreported_check_did_not_run():
    said = {"student/tests/test_part1_scaling.py": f"{FAILED}: SyntaxError: invalid syntax (scaling.py, line 3)"}
    shown = {entry["name"].split(": ", 1)[1]: entry["output"] for entry in public_checks.entries(said, KNOWN)}
    assert shown == {"test_a": "SyntaxError: invalid syntax (scaling.py, line 3)",
                     "test_b": "SyntaxError: invalid syntax (scaling.py, line 3)", "test_c": public_checks.NOT_RUN}


def test_the_known_checks_are_those_pytest_collects(tmp_path):
    folder = write_submission(tmp_path / "stubs", solution=False)
    proc = pytest_in(folder, "--collect-only", "-q", "student/tests")
    collected = {line.split("[")[0] for line in proc.stdout.splitlines() if "::" in line}
    assert collected and collected == set(public_checks.known())


def test_the_instructors_copies_replace_whatever_the_upload_has(tmp_path):
    package = tmp_path / "student"
    (package / "tests").mkdir(parents=True)
    (package / "tests" / "test_part1_scaling.py").write_text("def test_own():\n    pass\n")
    (package / "tests" / "test_extra.py").write_text("def test_extra():\n    pass\n")
    (package / "parts.py").mkdir()   # a folder where the handout has a file
    (package / "parts.py" / "keep.txt").write_text("x\n")
    public_checks.install(package)
    for name in ("tests/test_part1_scaling.py", "tests/conftest.py", "parts.py"):
        assert (package / name).read_bytes() == (REPO / "student" / name).read_bytes(), name
    assert not (package / "tests" / "test_extra.py").exists()


def test_where_a_sandbox_could_read_the_graders_files_no_check_runs():
    class NoSandbox:
        def spawn(self, second=True):
            raise AssertionError("no sandbox may start")

    shown = public_checks.run(NoSandbox(), None, SessionLog(), words_shown=False)
    assert shown and {entry["output"] for entry in shown} == {public_checks.UNGUARDED}


def test_the_public_checks_have_a_budget_of_their_own_that_the_stop_of_a_submission_allows_for():
    limits = Limits(call_timeout=2.0, budget=80.0)
    budget = public_checks.limits_for(limits).budget
    assert budget == (len(public_checks.check_files()) + 1) * 2.0   # all files at once, then each alone
    plan = isolation.Plan()
    without = RunSettings(limits, plan, "/tmp", "/tmp")
    with_checks = RunSettings(limits, plan, "/tmp", "/tmp", public_checks=True)
    assert worker.net(without) == limits.submission_net
    assert worker.net(with_checks) == limits.submission_net + budget
