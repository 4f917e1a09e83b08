"""grading_tests/scoring.py and the suite's points recorder, without running any submission."""
from types import SimpleNamespace

import pytest

from grading_tests import conftest as grading_conftest
from grading_tests.scoring import (
    MESSAGE_LIMIT,
    PART_POINTS,
    PART_USES,
    TestOutcome,
    cascade_notes,
    clip_message,
    gradescope_results,
    parts_using,
    score_outcomes,
)


def outcomes(*spec):
    """spec: (part, status[, weight]) per test."""
    return [TestOutcome(f"test_{i}", part, rest[0] if rest else 1, status)
            for i, (part, status, *rest) in enumerate(spec)]


def every_part(status="passed"):
    return outcomes(*[(part, status) for part in PART_POINTS])


def test_all_passed_is_100_and_the_parts_sum_to_100():
    report = score_outcomes(every_part())
    assert report.score == report.max_score == 100.0 == sum(PART_POINTS.values())


def test_a_part_is_shared_by_weight_among_the_tests_that_ran():
    report = score_outcomes(outcomes((1, "passed", 3), (1, "failed", 1), *[(p, "passed") for p in (2, 3, 4, 5, 6)]))
    first, second = report.tests[:2]
    assert first.max_score == pytest.approx(7.5) and first.score == pytest.approx(7.5)
    assert second.max_score == pytest.approx(2.5) and second.score == 0.0
    assert report.part_scores[1] == 7.5 and report.score == 97.5


def test_a_skipped_test_is_worth_nothing_and_does_not_lower_the_total():
    report = score_outcomes(outcomes((6, "passed"), (6, "skipped", 5), *[(p, "passed") for p in (1, 2, 3, 4, 5)]))
    skipped = report.tests[1]
    assert skipped.score == skipped.max_score == 0.0
    assert report.score == report.max_score == 100.0


def test_an_unknown_part_is_refused():
    with pytest.raises(ValueError, match="unknown part 7"):
        score_outcomes(outcomes((7, "passed")))


def test_skipped_output_says_skipped_once():
    report = score_outcomes([*every_part(), TestOutcome("test_cuda", 6, 1, "skipped", "needs a CUDA GPU")])
    output = next(t["output"] for t in gradescope_results(report)["tests"] if t["status"] == "skipped")
    assert output == "Skipped: needs a CUDA GPU"


def test_the_recorder_keeps_pytests_skip_reason_without_its_prefix():
    report = SimpleNamespace(longrepr=("grading_tests/test_part6_cuda.py", 57, "Skipped: needs a CUDA GPU"))
    assert grading_conftest._skip_reason(report) == "needs a CUDA GPU"


def test_parts_using_follows_the_calls_transitively():
    assert parts_using(1) == {2, 5, 6}
    assert parts_using(3) == {5, 6}
    assert parts_using(6) == set()
    assert all(part not in parts_using(part) for part in PART_USES)


def test_a_failing_part_that_others_use_is_named_as_the_root():
    report = score_outcomes([*every_part(), *outcomes((3, "failed"), (5, "failed"), (6, "failed"))])
    assert cascade_notes(report) == ["Part 3 (Splitting and merging heads) fails; Parts 5 and 6 use it: fix it "
                                     "first, their failures may come from it."]
    assert cascade_notes(report)[0] in gradescope_results(report)["output"]


def test_only_the_root_is_named_when_a_cascade_passes_through_a_failing_part():
    report = score_outcomes([*every_part(), *outcomes((1, "failed"), (2, "failed"), (5, "failed"))])
    notes = cascade_notes(report)
    assert len(notes) == 1 and notes[0].startswith("Part 1 (Scaling) fails; Parts 2 and 5 use it")


def test_two_independent_roots_are_both_named():
    report = score_outcomes([*every_part(), *outcomes((3, "failed"), (4, "failed"), (5, "failed"))])
    assert [note.split(" (")[0] for note in cascade_notes(report)] == ["Part 3", "Part 4"]


def test_no_note_when_nothing_builds_on_the_failing_part():
    assert cascade_notes(score_outcomes([*every_part(), *outcomes((5, "failed"))])) == []
    assert cascade_notes(score_outcomes([*every_part(), *outcomes((3, "failed"))])) == []
    report = score_outcomes([*every_part(), *outcomes((5, "failed"), (6, "failed"))])
    assert cascade_notes(report) == ["Part 5 (Multi-head and cross-attention) fails; Part 6 uses it: fix it first, "
                                     "their failures may come from it."]


def test_messages_are_clipped():
    assert clip_message("  short  ") == "short"
    long = clip_message("x" * (MESSAGE_LIMIT + 50))
    assert len(long) == MESSAGE_LIMIT + len(" [...]") and long.endswith(" [...]")
