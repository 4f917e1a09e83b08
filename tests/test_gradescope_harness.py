"""Gradescope's harness emulated (autograder.otter.harness: /autograder/source from dist's autograder.zip, the
upload unzipped into /autograder/submission, submission_metadata.json, run_autograder as Gradescope runs it,
in a temporary folder): the reference's upload (the session's `gradescope_reference`) gets what the run-wide batch
gave it, test by test (the handout's public checks beside them: tests/test_gradescope_public_checks.py), a module
that cannot be imported costs only its names and an upload where nothing imports
0, with the reason shown at once; results.json meets Gradescope's specification whatever the status; the
instructor's otter_config decides what students see."""
import json
import zipfile
from concurrent.futures import ThreadPoolExecutor

import pytest

from assignment.spec import SPEC
from autograder.otter import harness, packaging
from autograder.samples import write_submission
from grader.gradescope import run_autograder, schema, view
from grader.scoring import NOT_RUN_SHOWN, NOT_RUN_TITLE, PART_POINTS, is_public_check
from tests.routes import outcomes, submit

SLOW_FIXTURES = {"files", "runs"}   # tests.conftest marks the tests that use them slow
TOTAL = sum(PART_POINTS.values())


def uploads(root) -> dict:
    """name -> the file a student uploads (the reference's is the session's gradescope_reference)."""
    syntax_error = write_submission(root / "syntax-error")
    masking = syntax_error / "student" / "masking.py"
    masking.write_text(masking.read_text() + "\ndef unfinished(:\n")
    nothing_imports = write_submission(root / "nothing-imports")
    for module in nothing_imports.glob("student/*.py"):
        if module.stem in SPEC.modules:
            module.write_text(module.read_text() + "\ndef unfinished(:\n")
    # A status the student's code chooses: timeout. It spins in padding_mask, which no other graded code calls:
    # two strikes end it (a spin in a function the module calls costs a strike in each caller).
    spins = write_submission(root / "spins")
    masking = spins / "student" / "masking.py"
    before, after = masking.read_text().split("def padding_mask(")
    spin = after.replace('    """\n', '    """\n    while True:\n        pass\n', 1)
    masking.write_text(before + "def padding_mask(" + spin)
    no_package = root / "no-package.zip"
    with zipfile.ZipFile(no_package, "w") as zf:
        zf.writestr("attention.ipynb", "{}")
        zf.writestr("notes.py", "x = 1\n")   # none of the graded modules (those alone would be graded)
    return {"stubs": submit(write_submission(root / "stubs", solution=False), root / "stubs.zip"),
            "syntax-error": submit(syntax_error, root / "syntax-error.zip"),
            "nothing-imports": submit(nothing_imports, root / "nothing-imports.zip"),
            "spins": submit(spins, root / "spins.zip"),
            "no-package": no_package}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict:
    return uploads(tmp_path_factory.mktemp("uploads"))


CASES = ["reference", "syntax-error", "nothing-imports", "no-package", "spins"]


@pytest.fixture(scope="module")
def runs(dist, files, gradescope_reference, tmp_path_factory) -> dict[str, harness.Run]:
    root = tmp_path_factory.mktemp("harness")
    # The upload that spins, under a per-call timeout of one CPU second (Otter's form of the setting): its two
    # strikes cost 2 s instead of 20.
    one_second = packaging.build_autograder_zip(root / "one-second.zip", {"timeout": 1})
    built = {name: one_second if name == "spins" else dist / "autograder.zip" for name in CASES}
    graded = CASES[1:]
    with ThreadPoolExecutor(2) as pool:
        done = pool.map(lambda name: harness.run(built[name], files[name], root / name), graded)
        return {"reference": gradescope_reference, **dict(zip(graded, done, strict=True))}
LATER = view.LATER_NOTES["after_published"]


@pytest.mark.parametrize("name", CASES)
def test_run_autograder_writes_results_where_gradescope_reads_them(runs, name):
    run = runs[name]
    assert run.returncode == 0, run.stdout[-3000:]
    assert run.results is not None
    assert (run.root / "results" / "stdout").read_text() == run.stdout
    assert 0 < run.results["execution_time"] <= run.seconds


def test_the_reference_scores_full_marks_and_reads_when_it_will_see_more(gradescope_reference):
    results = gradescope_reference.results
    assert results["score"] == TOTAL
    assert results["output"] == view.GRADED_NOTE + view.public_checks_note(results) + LATER


def test_gradescope_gets_the_run_wide_batchs_scores_test_by_test(gradescope_reference, graded_zoo):
    assert outcomes(gradescope_reference.results) == outcomes(graded_zoo.results["reference"])


def test_a_syntax_error_costs_only_what_cannot_be_imported_and_the_student_sees_where_at_once(runs):
    results = runs["syntax-error"].results
    # masking.py is Part 2's, and Parts 5 and 6 import it: Parts 1, 3 and 4 are graded, and full.
    assert results["score"] == sum(PART_POINTS[number] for number in (1, 3, 4))
    first_line = results["output"].splitlines()[0]
    assert first_line.startswith(view.GRADED_NOTE + " Note: could not import causal_mask")
    assert "SyntaxError" in first_line and "masking.py" in first_line and "line" in first_line
    assert "the rest was graded" in first_line and first_line.endswith(LATER)


def test_an_upload_where_nothing_imports_scores_0_and_the_student_sees_why_at_once(runs):
    results = runs["nothing-imports"].results
    assert results["score"] == 0.0
    first_line = results["output"].splitlines()[0]
    assert first_line.startswith("Your submission was received; grading ended with error. Reason: SyntaxError")
    assert "line" in first_line and "nothing could be imported" in first_line and first_line.endswith(LATER)


def test_an_upload_without_the_package_scores_0_and_says_what_is_missing(runs):
    results = runs["no-package"].results
    assert results["score"] == 0.0 and "student/" in results["output"].splitlines()[0]


def test_hidden_results_are_shown_after_publication_and_stdout_to_instructors_only(runs):
    assert runs["spins"].results["extra_data"]["gradebook_row"]["status"] == "timeout"
    for name in CASES:   # whatever the status, which the student's code chooses
        results = runs[name].results
        assert {t["visibility"] for t in results["tests"] if not is_public_check(t)} <= {"after_published"}
        assert results["visibility"] == "after_published" and results["stdout_visibility"] == "hidden"
        assert "Part 2" not in results["output"] and "part2" not in results["output"], "scores before publication"
    assert "part2: 30" in runs["reference"].stdout, "the instructors' output lists the parts"


def test_results_meet_gradescopes_specification(runs):
    for name in CASES:
        found = schema.problems(runs[name].results)
        found += schema.total_problems(runs[name].results, TOTAL)
        assert found == [], (name, schema.summary(found))


def test_the_cuda_tests_that_could_not_run_are_one_informational_line(runs):
    tests = runs["reference"].results["tests"]
    assert {t.get("status") for t in tests} <= {"passed", None}
    (not_run,) = [t for t in tests if t["name"] == NOT_RUN_TITLE]
    assert "needs a CUDA GPU" in not_run["output"] and len(not_run["output"].splitlines()) <= NOT_RUN_SHOWN + 1


def test_an_error_result_keeps_the_parts_maxima_and_names_the_error_once(runs):
    results = runs["nothing-imports"].results
    error = results["output"].split("Reason: ", 1)[1].removesuffix(LATER)
    shown = [t for t in results["tests"] if t["name"] != view.SUMMARY_TITLE and not is_public_check(t)]
    assert [t["max_score"] for t in shown] == [float(p) for p in PART_POINTS.values()]
    assert not any(error in t["output"] for t in shown)


def test_the_instructors_otter_config_decides_what_students_see(files, tmp_path):
    autograder = packaging.build_autograder_zip(tmp_path / "autograder.zip",
                                                {"show_hidden": False, "show_stdout": True, "public_checks": False})
    run = harness.run(autograder, files["stubs"], tmp_path / "run")
    assert run.returncode == 0, run.stdout[-3000:]
    assert {t["visibility"] for t in run.results["tests"]} == {"hidden"}   # and no public check at all
    assert run.results["stdout_visibility"] == "after_published"
    assert run.results["output"] == view.GRADED_NOTE   # and no promise of a later view


def test_an_engine_failure_tells_the_student_it_is_not_their_fault(files, dist, tmp_path):
    broken = tmp_path / "autograder.zip"
    with zipfile.ZipFile(dist / "autograder.zip") as source, zipfile.ZipFile(broken, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "grader/run/command.py":
                data = b"import sys\nprint('engine exploded')\nsys.exit(3)\n"
            target.writestr(item, data)
    run = harness.run(broken, files["stubs"], tmp_path / "run")
    assert run.returncode == 1
    assert run.results["output"] == run_autograder.ENGINE_FAILED and run.results["score"] == 0.0
    assert "engine exploded" in run.stdout and "exit 3" in run.stdout
    assert schema.problems(run.results) == []


def test_the_harness_lays_out_gradescopes_folders(runs):
    root = runs["reference"].root
    assert (root / "source" / "otter_config.json").is_file() and (root / "run_autograder").stat().st_mode & 0o111
    assert (root / "submission" / "student" / "masking.py").is_file()
    metadata = json.loads((root / "submission_metadata.json").read_text())
    assert metadata["users"][0]["email"] and metadata["assignment"]["title"]
