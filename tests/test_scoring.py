"""grader/scoring.py and the suite's points recorder (grader/suite.py), without running any submission."""
from types import SimpleNamespace

import pytest

from grader import suite
from grader.gradescope import schema
from grader.scoring import (
    MESSAGE_LIMIT,
    NOT_RUN_SHOWN,
    NOT_RUN_TITLE,
    PART_POINTS,
    TestOutcome,
    cascade_notes,
    clip_message,
    could_not_grade,
    entry_part,
    entry_test,
    error_results,
    gradescope_results,
    parts_using,
    score_outcomes,
    shares,
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


def test_tests_that_did_not_run_are_one_informational_entry_not_a_status():
    cuda = [TestOutcome(f"test_cuda[{i}]", 6, 0.1, "skipped", "needs a CUDA GPU") for i in range(108)]
    inconclusive = TestOutcome("test_device", 2, 1, "skipped", "inconclusive on this machine: reads values")
    results = gradescope_results(score_outcomes([*every_part(), *cuda, inconclusive]))
    assert {t.get("status") for t in results["tests"]} == {"passed", None}
    (entry,) = [t for t in results["tests"] if "status" not in t]
    assert entry["name"] == NOT_RUN_TITLE and "score" not in entry and "max_score" not in entry
    assert entry["output"].splitlines() == ["- 108 tests (Part 6): needs a CUDA GPU",
                                            "- Part 2, test_device: inconclusive on this machine: reads values"]
    assert schema.problems(results) == []


def test_the_informational_entry_lists_the_commonest_reasons_and_counts_the_rest():
    skipped = [TestOutcome(f"test_{i}", 2, 1, "skipped", f"reason {i}") for i in range(NOT_RUN_SHOWN + 3)]
    (entry,) = [t for t in gradescope_results(score_outcomes([*every_part(), *skipped]))["tests"] if "status" not in t]
    assert len(entry["output"].splitlines()) == NOT_RUN_SHOWN + 1 and entry["output"].endswith("- and 3 more")


def test_what_went_wrong_while_grading_leads_the_output():
    results = gradescope_results(score_outcomes(every_part()), extra_output="Sandbox: isolated.",
                                 lead="timeout: 1 call(s) timed out: causal_mask")
    assert results["output"].splitlines()[0] == "timeout: 1 call(s) timed out: causal_mask"
    assert results["output"].endswith("Sandbox: isolated.") and "Part 1 Scaling: 10 / 10" in results["output"]


def test_nothing_not_run_means_no_informational_entry():
    assert all("status" in t for t in gradescope_results(score_outcomes(every_part()))["tests"])


@pytest.mark.parametrize("count", [3, 7, 24, 56, 108])
def test_shares_add_up_to_exactly_the_parts_points(count):
    """Thirds and sevenths of 10 points rounded each to 4 places would add up to 10.0002 or 9.9999."""
    report = score_outcomes([TestOutcome(f"t{i}", part, 1 + i % 3, "passed") for part in PART_POINTS
                             for i in range(count)])
    results = gradescope_results(report)
    assert results["score"] == report.score == 100.0
    assert schema.total_problems({**results, "execution_time": 1.0}, 100) == []
    for part, points in PART_POINTS.items():
        scores = [o.max_score for o in report.tests if o.part == part]
        assert sum(round(s * 10**4) for s in scores) == points * 10**4
        assert max(scores) - min(scores) <= 2 * points / (1 + 2 / 3) / count   # in proportion to the weights


def test_shares_follow_the_weights_to_the_last_decimal():
    assert shares(10, [1, 1, 1]) == [3.3334, 3.3333, 3.3333]
    assert shares(1, [0, 1]) == [0.0, 1.0] and shares(5, [0, 0]) == [0.0, 0.0]


def test_an_error_result_leads_with_the_error_keeps_the_maxima_and_says_it_once():
    message = "SyntaxError: invalid syntax (masking.py, line 12)"
    results = error_results("error", message, extra_output="Sandbox: isolated.")
    assert results["output"].splitlines()[0] == could_not_grade("error", message)
    assert results["output"].count(message) == 1 and all(message not in t["output"] for t in results["tests"])
    assert [(t["score"], t["max_score"]) for t in results["tests"]] == [(0.0, float(p)) for p in PART_POINTS.values()]
    assert "Part 2 Masking and attention weights: 0 / 30" in results["output"] and results["score"] == 0.0
    assert schema.problems(results) == []
    assert schema.total_problems({**results, "execution_time": 1.0}, 100) == []


def test_the_recorder_keeps_pytests_skip_reason_without_its_prefix():
    report = SimpleNamespace(longrepr=("grading_tests/test_part6_cuda.py", 57, "Skipped: needs a CUDA GPU"))
    assert suite._skip_reason(report) == "needs a CUDA GPU"


def test_parts_using_follows_the_calls_transitively():
    assert parts_using(1) == {2, 5, 6}
    assert parts_using(3) == {5, 6}
    assert parts_using(6) == set()
    assert all(part not in parts_using(part) for part in PART_POINTS)


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
                                     "its failures may come from it."]


def test_messages_are_clipped():
    assert clip_message("  short  ") == "short"
    long = clip_message("x" * (MESSAGE_LIMIT + 50))
    assert len(long) == MESSAGE_LIMIT + len(" [...]") and long.endswith(" [...]")


def test_each_entry_carries_its_part_and_test_in_gradescopes_own_fields_and_the_name_is_for_people():
    results = gradescope_results(score_outcomes(outcomes((1, "passed"), (3, "failed"), (3, "passed"))))
    graded = [entry for entry in results["tests"] if "status" in entry]
    assert [(entry_part(e), entry_test(e), e["number"]) for e in graded] == [
        (1, "test_0", "1.1"), (3, "test_1", "3.1"), (3, "test_2", "3.2")]
    renamed = [{**entry, "name": "anything a course likes"} for entry in graded]   # nothing parses the name
    assert [(entry_part(e), entry_test(e)) for e in renamed] == [(1, "test_0"), (3, "test_1"), (3, "test_2")]
    whole = error_results("error", "no student/ package")["tests"]
    assert [(entry_part(e), entry_test(e)) for e in whole] == [(p, None) for p in PART_POINTS]
    legacy = {"name": "Part 2 (Masking): test_x[float16]"}   # results written before the tags, resumed
    assert (entry_part(legacy), entry_test(legacy)) == (2, "test_x[float16]")
