"""The hidden suite tells right from wrong: every bug loses points where it lives, every correct variant scores 100.

Each sample submission (autograder/zoo) is graded by `pytest grading_tests --submission DIR` in a
child process, exactly as an instructor would run the suite on a trusted folder. The grading
engine is proven separately (tests/test_engine*.py); here only the suite's judgement is on trial.
"""
import json
import re

import pytest

from autograder.samples import write_submission
from autograder.zoo.bugs import BUGS
from autograder.zoo.variants import VARIANTS
from grading_tests.scoring import PART_POINTS, PART_TITLES
from student.parts import PARTS
from tests.suite_runner import grade_folder, grade_samples, part_scores

REFERENCE, STUBS = "reference", "stubs"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Sample name -> results.json dict, for the reference, the stubs, every bug and every variant."""
    samples = {REFERENCE: {}, STUBS: None}
    samples |= {f"bug:{sample.name}": sample.overrides for sample in BUGS}
    samples |= {f"ok:{sample.name}": sample.overrides for sample in VARIANTS}
    return grade_samples(samples, tmp_path_factory.mktemp("zoo"))


def test_the_zoo_is_as_large_as_promised():
    assert len(BUGS) >= 30 and len(VARIANTS) >= 8
    assert len({sample.name for sample in BUGS + VARIANTS}) == len(BUGS) + len(VARIANTS), "duplicate sample names"
    assert {sample.part for sample in BUGS} == set(PART_POINTS), "every part needs bugs of its own"


def test_parts_sum_to_100_and_match_the_students_titles():
    assert sum(PART_POINTS.values()) == 100
    assert {number: title for number, (title, _names) in PARTS.items()} == PART_TITLES


def test_the_reference_scores_100_with_every_test_passing(graded):
    results = graded[REFERENCE]
    assert results["score"] == 100.0, results["output"]
    failed = [t["name"] for t in results["tests"] if t["status"] == "failed"]
    assert not failed, failed
    for part, (score, most) in part_scores(results).items():   # per-test scores are rounded to 4 places
        assert score == pytest.approx(PART_POINTS[part], abs=0.01) and most == pytest.approx(PART_POINTS[part], abs=0.01)


def test_the_untouched_stubs_score_0(graded):
    results = graded[STUBS]
    assert results["score"] == 0.0
    assert not [t["name"] for t in results["tests"] if t["status"] == "passed"]
    # The student reads which part to implement, not a traceback.
    assert any("is not implemented yet" in t["output"] for t in results["tests"])


@pytest.mark.parametrize("bug", BUGS, ids=lambda sample: f"part{sample.part}-{sample.name}")
def test_every_bug_loses_points_in_its_own_part(graded, bug):
    results = graded[f"bug:{bug.name}"]
    score, most = part_scores(results)[bug.part]
    assert score < most, f"{bug.name} ({bug.why or 'bug'}) keeps all {most} points of Part {bug.part}"
    assert results["score"] < 100.0


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda sample: sample.name)
def test_every_correct_variant_scores_exactly_100(graded, variant):
    results = graded[f"ok:{variant.name}"]
    failed = [f"{t['name']}: {t['output'][:300]}" for t in results["tests"] if t["status"] == "failed"]
    assert results["score"] == 100.0 and not failed, "\n".join(failed)


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
    "dropout-in-eval": "dropout in eval mode",
    "nan-on-fully-masked-rows": "must give zeros",
}


@pytest.mark.parametrize("bug, words", sorted(HINTS.items()))
def test_known_mistakes_are_named_in_the_feedback(graded, bug, words):
    outputs = [t["output"] for t in graded[f"bug:{bug}"]["tests"] if t["status"] == "failed"]
    assert any(words in output for output in outputs), f"no failure of {bug} says {words!r}:\n" + "\n".join(outputs[:5])


def test_feedback_never_prints_hidden_tensors(graded):
    """Messages show at most one wrong entry and shapes, never a tensor repr or a long list of numbers."""
    tensor_repr = re.compile(r"tensor\(\[")
    long_number_list = re.compile(r"(-?\d+\.\d+,\s*){4,}")
    for name, results in graded.items():
        for test in results["tests"]:
            output = test["output"]
            assert not tensor_repr.search(output), f"{name} / {test['name']}: {output[:500]}"
            assert not long_number_list.search(output), f"{name} / {test['name']}: {output[:500]}"
            assert len(output) <= 1100, f"{name} / {test['name']} prints {len(output)} characters"


def test_a_failure_says_what_is_wrong_in_plain_words(graded):
    outputs = [t["output"] for t in graded["bug:split-without-transpose"]["tests"] if t["status"] == "failed"]
    assert any(re.search(r"is wrong at \d+ of \d+ entries; first at index \(.*\): got .*, expected", o) for o in outputs)
    shapes = [t["output"] for t in graded["bug:cross-attention-roles-swapped"]["tests"] if t["status"] == "failed"]
    assert any(re.search(r"has shape \(.*\), expected \(.*\)", o) for o in shapes), shapes[:3]


def test_skipped_gpu_tests_are_worth_nothing_and_do_not_lower_the_total(graded):
    results = graded[REFERENCE]
    skipped = [t for t in results["tests"] if t["status"] == "skipped"]
    assert skipped, "without a GPU the CUDA tests are reported as skipped"
    assert all(t["score"] == 0 and t["max_score"] == 0 for t in skipped)


def test_the_same_submission_gets_the_same_result_every_run(graded, tmp_path):
    """Deterministic: a bug whose tests use dropout and random inputs, graded again, gives identical results."""
    for name, overrides in (("bug:dropout-keep-probability", next(s for s in BUGS if s.name == "dropout-keep-probability").overrides),
                            (REFERENCE, {})):
        folder = write_submission(tmp_path / name.replace(":", "-"), overrides=overrides)
        again = grade_folder(folder, tmp_path / f"{name.replace(':', '-')}.json", hash_seed="123")
        first = graded[name]
        assert json.dumps(again["tests"], sort_keys=True) == json.dumps(first["tests"], sort_keys=True)
        assert again["score"] == first["score"]
