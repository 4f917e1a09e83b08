"""The hidden suite tells right from wrong: every bug loses points where it lives, every correct variant scores 100.

The zoo (autograder/zoo) is graded once per run by the engine shipped in autograder.zip (the
`graded_zoo` fixture), and judged by the self-check's own `judge`, so the tests and
`python -m autograder selfcheck` cannot disagree about what "loses points in its part" means.
"""
import json
import re

import pytest

from autograder import selfcheck
from autograder.zoo.bugs import BUGS
from autograder.zoo.variants import VARIANTS
from grader.scoring import NOT_RUN_TITLE, PART_POINTS
from grading_tests import lowp_tolerance as lowp
from tests.suite_runner import grade_folder, part_scores

REFERENCE, STUBS = "reference", "stubs"


def test_the_zoo_is_as_large_as_promised():
    assert len(BUGS) >= 30 and len(VARIANTS) >= 8
    assert len({sample.name for sample in BUGS + VARIANTS}) == len(BUGS) + len(VARIANTS), "duplicate sample names"
    assert {sample.part for sample in BUGS} == set(PART_POINTS), "every part needs bugs of its own"


def test_the_reference_scores_100_with_every_test_passing(graded_zoo):
    assert graded_zoo.verdict(REFERENCE).ok, graded_zoo.verdict(REFERENCE)
    results = graded_zoo.results[REFERENCE]
    failed = [t["name"] for t in results["tests"] if t.get("status") == "failed"]
    assert not failed, failed
    for part, (score, most) in part_scores(results).items():   # shares exact to 4 places: no rounding slack
        assert score == most == PART_POINTS[part]


def test_the_untouched_stubs_score_0(graded_zoo):
    assert graded_zoo.verdict(STUBS).ok, graded_zoo.verdict(STUBS)
    results = graded_zoo.results[STUBS]
    assert not [t["name"] for t in results["tests"] if t.get("status") == "passed"]
    # The student reads which part to implement, not a traceback.
    assert any("is not implemented yet" in t["output"] for t in results["tests"])


@pytest.mark.parametrize("bug", BUGS, ids=lambda sample: f"part{sample.part}-{sample.name}")
def test_every_bug_loses_points_in_its_own_part(graded_zoo, bug):
    verdict = graded_zoo.verdict(f"bug-{bug.name}")
    assert verdict.ok, f"{bug.name} ({bug.why or 'bug'}): expected {verdict.expected}, got {verdict.got}"


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda sample: sample.name)
def test_every_correct_variant_scores_exactly_100(graded_zoo, variant):
    name = f"variant-{variant.name}"
    failed = [f"{t['name']}: {t['output'][:300]}" for t in graded_zoo.results.get(name, {}).get("tests", [])
              if t.get("status") == "failed"]
    assert graded_zoo.verdict(name).ok and not failed, "\n".join(failed) or graded_zoo.verdict(name)


def failures(graded_zoo, name: str) -> list[str]:
    return [t["output"] for t in graded_zoo.results[name]["tests"] if t.get("status") == "failed"]


# Known mistakes and the words the student must read for them.
HINTS = {
    "no-scale": "did you multiply by 1/sqrt(E)?",
    "scale-by-E": "divided by E instead of sqrt(E)",
    "causal-triu": "upper-triangular mask (triu)",
    "softmax-over-queries": "softmax over the queries (dim=-2)",
    "mask-after-softmax": "mask the scores BEFORE the softmax",
    "padding-off-by-one": "one real token too many",
    "scale-by-model-dim": "scale by the HEAD dim",
    "cross-attention-roles-swapped": "roles swapped? Queries come from x",
    "split-without-transpose": "without a transpose",
    "dropout-in-eval": "drop weights only when self.training is True",
    # Its memory hands the first answer back for the same input: two answers of one process agree.
    "eval-dropout-remembered": "differs from the same module with dropout=0.0",
    "float32-softmax-cast-back": "the size of float32 rounding",
    "nan-on-fully-masked-rows": "must give zeros",
}


@pytest.mark.parametrize("bug, words", sorted(HINTS.items()))
def test_known_mistakes_are_named_in_the_feedback(graded_zoo, bug, words):
    outputs = failures(graded_zoo, f"bug-{bug}")
    assert any(words in output for output in outputs), f"no failure of {bug} says {words!r}:\n" + "\n".join(outputs[:5])


def test_a_cascade_names_its_root_part_in_the_summary(graded_zoo):
    output = graded_zoo.results["bug-merge-without-transpose"]["output"]
    assert "Part 3 (Splitting and merging heads) fails; Parts 5 and 6 use it: fix it first" in output
    assert "fix it first" not in graded_zoo.results[REFERENCE]["output"]


def test_the_tests_not_run_are_listed_without_pytests_skip_prefix(graded_zoo):
    outputs = [t["output"] for results in graded_zoo.results.values() for t in results["tests"]
               if t["name"] == NOT_RUN_TITLE]
    assert outputs and not [o for o in outputs if "Skipped" in o]


def test_a_device_check_decides_on_a_machine_without_a_gpu(graded_zoo):
    """The emulated second device holds values: code that reads the lengths' values passes its device tests,
    and a mask made on the default device instead of the requested one fails them, with no GPU."""
    results = graded_zoo.results["variant-padding-mask-from-python-ints"]
    device_tests = [t for t in results["tests"] if "padding_mask_on_the" in t["name"]]
    assert len(device_tests) == 2 and {t["status"] for t in device_tests} == {"passed"} and results["score"] == 100.0
    not_run = "".join(t["output"] for t in results["tests"] if t["name"] == NOT_RUN_TITLE)
    assert "padding_mask" not in not_run
    bug = graded_zoo.results["bug-causal-mask-on-default-device"]
    assert [t["status"] for t in bug["tests"] if t["name"].endswith("test_causal_mask_on_the_requested_device")] \
        == ["failed"]


def test_feedback_never_prints_hidden_tensors(graded_zoo):
    """Messages show at most one wrong entry and shapes, never a tensor repr or a long list of numbers."""
    tensor_repr = re.compile(r"tensor\(\[")
    long_number_list = re.compile(r"(-?\d+\.\d+,\s*){4,}")
    for name, results in graded_zoo.results.items():
        for test in results["tests"]:
            output = test["output"]
            assert not tensor_repr.search(output), f"{name} / {test['name']}: {output[:500]}"
            assert not long_number_list.search(output), f"{name} / {test['name']}: {output[:500]}"
            assert len(output) <= 1100, f"{name} / {test['name']} prints {len(output)} characters"


def test_a_failure_says_what_is_wrong_in_plain_words(graded_zoo):
    outputs = failures(graded_zoo, "bug-split-without-transpose")
    assert any(re.search(r"is wrong at \d+ of \d+ entries; first at index \(.*\): got .*, expected",
                         o) for o in outputs)
    shapes = failures(graded_zoo, "bug-cross-attention-roles-swapped")
    assert any(re.search(r"has shape \(.*\), expected \(.*\)", o) for o in shapes), shapes[:3]


def test_skipped_gpu_tests_are_worth_nothing_and_do_not_lower_the_total(graded_zoo):
    results = graded_zoo.results[REFERENCE]
    assert not [t for t in results["tests"] if "test_part6_cuda" in t["name"]], "a test that did not run is listed"
    (not_run,) = [t for t in results["tests"] if t["name"] == NOT_RUN_TITLE]
    cuda_tests = len(lowp.CASES) * 3 * (2 + len(lowp.BACKENDS))   # dtypes; manual, fused, fused on each backend
    assert f"- {cuda_tests} tests (Part 6): needs a CUDA GPU" in not_run["output"] and "max_score" not in not_run
    assert results["score"] == 100.0 and part_scores(results)[6] == (15.0, 15.0)


def test_the_same_submission_gets_the_same_result_every_run(graded_zoo, dist, tmp_path):
    """Deterministic: graded again with another hash seed, a bug whose tests use dropout and random inputs
    and the reference get identical results."""
    chosen = [graded_zoo.cases[name] for name in ("bug-dropout-keep-probability", REFERENCE)]
    again = selfcheck.grade(chosen, dist / "autograder.zip", tmp_path, workers=2, env={"PYTHONHASHSEED": "123"})
    for case in chosen:
        first = graded_zoo.results[case.name]
        assert json.dumps(again[case.name]["tests"], sort_keys=True) == json.dumps(first["tests"], sort_keys=True)
        assert again[case.name]["score"] == first["score"]


def test_the_suite_grades_a_trusted_folder_in_process_as_the_engine_does(graded_zoo, tmp_path):
    """`pytest grading_tests --submission DIR` (no engine, for instructors) agrees with the engine, test by test."""
    for name in (REFERENCE, "bug-split-without-transpose"):
        results = grade_folder(graded_zoo.out / "submissions" / name, tmp_path / f"{name}.json")
        engine = graded_zoo.results[name]
        assert [(t["name"], t.get("status"), t.get("score")) for t in results["tests"]] == [
            (t["name"], t.get("status"), t.get("score")) for t in engine["tests"]]
