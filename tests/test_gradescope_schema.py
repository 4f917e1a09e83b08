"""The results.json checker of Gradescope's specification, the otter_config keys and their meanings (checked
against otter's own code), and what a student sees, when (view): fast, no grading."""
import copy
import dataclasses

import pytest
from otter.run.run_autograder.autograder_config import AutograderConfig
from otter.test_files import GradingResults, abstract_test
from otter.test_files.ok_test import OKTestFile

from assignment.spec import SPEC, Spec, load
from autograder.otter import config
from grader.gradescope import run_autograder, schema, view
from grader.run import trusted

GOOD = {
    "score": 3.0, "execution_time": 4.2, "output": "Graded.", "visibility": "after_published",
    "stdout_visibility": "hidden", "extra_data": {"gradebook_row": {"status": "graded", "max_score": 4.0}},
    "tests": [
        {"name": "Part 1: a", "score": 1.0, "max_score": 1.0, "status": "passed", "output": "ok",
         "visibility": "after_published", "tags": ["part1"], "number": "1.1", "output_format": "text"},
        {"name": "Part 2: b", "score": 2.0, "max_score": 3.0, "status": "failed", "output": "wrong"},
    ],
    "leaderboard": [{"name": "Time", "value": 15.1, "order": "asc"}, {"name": "Stars", "value": "***"}],
}

# One breach each, and the field the checker must blame.
BREACHES = {
    "a skipped test": (lambda d: d["tests"][0].update(status="skipped"), "tests[].status"),
    "a misspelt visibility key": (lambda d: d["tests"][0].update(visiblity="visible"), "tests[].visiblity"),
    "an unknown visibility": (lambda d: d.update(visibility="after_grading"), "visibility"),
    "an unknown stdout visibility": (lambda d: d.update(stdout_visibility="students"), "stdout_visibility"),
    "a boolean score": (lambda d: d.update(score=True), "score"),
    "an infinite max score": (lambda d: d["tests"][1].update(max_score=float("inf")), "tests[].max_score"),
    "time as text": (lambda d: d.update(execution_time="4.2"), "execution_time"),
    "negative time": (lambda d: d.update(execution_time=-1), "execution_time"),
    "no score anywhere": (lambda d: [d.pop("score"), d["tests"][1].pop("score")], "score"),
    "a list as output": (lambda d: d.update(output=["a"]), "output"),
    "a tag that is not text": (lambda d: d["tests"][0].update(tags=[1]), "tests[].tags"),
    "an unknown output format": (lambda d: d["tests"][0].update(output_format="rtf"), "tests[].output_format"),
    "an unknown leaderboard order": (lambda d: d["leaderboard"][0].update(order="up"), "leaderboard[].order"),
    "a top-level typo": (lambda d: d.update(scores=3.0), "scores"),
}


def test_a_document_as_gradescope_documents_it_has_no_problems():
    assert schema.problems(GOOD) == []
    assert schema.total_problems(GOOD, total=4.0) == []
    schema.validate(GOOD, total=4.0)
    # The specification's minimum: a score on every test instead of at the top.
    schema.validate({"tests": [{"score": 1}]})


@pytest.mark.parametrize("breach", sorted(BREACHES))
def test_each_breach_of_the_specification_is_named_by_its_field(breach):
    edit, field = BREACHES[breach]
    document = copy.deepcopy(GOOD)
    edit(document)
    found = schema.problems(document)
    assert [p.field for p in found] == [field], found
    with pytest.raises(schema.SchemaError, match=field.replace("[", r"\[").replace("]", r"\]")):
        schema.validate(document)


def test_points_must_add_up_exactly_and_the_run_must_say_how_long_it_took():
    document = copy.deepcopy(GOOD)
    document["tests"][1]["max_score"] = 3.002
    document.pop("execution_time")
    fields = sorted(p.field for p in schema.total_problems(document, total=4.0))
    assert fields == ["execution_time", "tests[].max_score (sum)"]
    document["score"] = 2.5
    assert "score (sum)" in [p.field for p in schema.total_problems(document, total=4.0)]
    document["tests"][0]["score"] = 1.5
    assert "tests[].score (range)" in [p.field for p in schema.total_problems(document, total=4.0)]
    # Float sums that are 4 to the sixth decimal are 4.
    document = copy.deepcopy(GOOD)
    document["tests"][1]["max_score"] = 3.0000000000001
    assert schema.total_problems(document, total=4.0) == []


def test_the_summary_counts_what_it_does_not_list():
    document = copy.deepcopy(GOOD)
    document["tests"] = [dict(GOOD["tests"][0], status="skipped") for _ in range(5)]
    text = schema.summary(schema.problems(document), per_field=2)
    assert text.count("'skipped' is not one of passed, failed") == 2 and "... and 3 more" in text


# --------------------------------------------------------------------------- otter_config keys

def spec_with(*, visibilities: dict | None = None, **settings) -> Spec:
    """This assignment's spec with some settings, and parts' visibilities, changed."""
    spec = SPEC.with_settings(settings)
    parts = tuple(dataclasses.replace(part, visibility=(visibilities or {}).get(part.number, part.visibility))
                  for part in spec.parts)
    return dataclasses.replace(spec, parts=parts)


def test_the_settings_otter_knows_keep_otters_names_and_the_cosmetic_keys_its_defaults():
    otters = AutograderConfig({})
    assert all(hasattr(otters, key) for key in config.OTTER_SETTINGS)
    assert all(hasattr(otters, key) for key in (*config.FIXED, *config.COSMETIC))
    assert {key: getattr(otters, key) for key in ("logo", "print_score")} == \
        {key: config.COSMETIC[key] for key in ("logo", "print_score")}


def _otters_visibilities(show_hidden: bool, show_stdout: bool) -> tuple[str, str]:
    """What otter itself writes for a hidden test's result and for stdout under these settings."""
    case = abstract_test.TestCase("q1 - 1", "", hidden=True, points=1, success_message=None, failure_message=None)
    test_file = OKTestFile("q1", "q1.py", [case])
    test_file.test_case_results = [abstract_test.TestCaseResult(case, None, passed=True)]
    output = GradingResults([test_file]).to_gradescope_dict(
        AutograderConfig({"show_hidden": show_hidden, "show_stdout": show_stdout}))
    hidden = next(t["visibility"] for t in output["tests"] if t["name"] == "q1")
    return hidden, output.get("stdout_visibility", "hidden")


@pytest.mark.parametrize("show_hidden", [True, False])
@pytest.mark.parametrize("show_stdout", [True, False])
def test_show_hidden_and_show_stdout_mean_what_they_mean_to_otter(show_hidden, show_stdout):
    spec, _ = config.resolved(SPEC, {"show_hidden": show_hidden, "show_stdout": show_stdout})
    shown = view.present(engine_results(), spec, 1.0)
    assert (spec.visibility(1), shown["stdout_visibility"]) == _otters_visibilities(show_hidden, show_stdout)


def test_by_default_hidden_results_are_shown_after_publication():
    assert {SPEC.visibility(number) for number in SPEC.numbers} == {"after_published"}
    assert SPEC.settings.show_stdout is False


@pytest.mark.parametrize(("overrides", "message"), [
    ({"pdf": True}, "pdf is not supported"),
    ({"token": "abc"}, "token is not supported"),
    ({"show_hidden": "yes"}, "show_hidden must be true or false"),
    ({"points_possible": True}, "points_possible must be a positive number"),
    ({"points_possible": 0}, "points_possible must be a positive number"),
    ({"timeout": "30"}, "timeout must be a positive number"),
    ({"forbidden_calls": "ignore"}, 'forbidden_calls must be "cost" or "flag"'),
    ({"grade_from_log": True}, "grade_from_log must be false"),
    ({"plugins": ["otter.plugins.builtin.GoogleSheetsGradeOverride"]}, "plugins must be"),
    ({"logo": "yes"}, "logo must be true or false"),
])
def test_a_config_the_grader_cannot_honour_is_refused_with_the_reason(overrides, message):
    with pytest.raises(config.ConfigError, match=message):
        config.resolved(SPEC, overrides)


def test_an_instructors_choice_is_kept_and_travels_in_the_resolved_spec(tmp_path):
    spec, cosmetic = config.resolved(SPEC, {"show_hidden": False, "show_stdout": True, "points_possible": 50,
                                            "timeout": 30, "budget": 100, "logo": False})
    assert (spec.settings.show_hidden, spec.settings.show_stdout, spec.settings.points_possible) == (False, True, 50)
    assert (spec.settings.call_timeout, spec.settings.budget, cosmetic) == (30, 100, {"logo": False})
    shipped = tmp_path / "assignment.toml"
    shipped.write_text(spec.to_toml())
    assert load(shipped).settings == spec.settings and load(shipped).parts == spec.parts
    otters = config.otter_config(spec, cosmetic)
    assert (otters["show_hidden"], otters["points_possible"], otters["logo"]) == (False, 50, False)


# --------------------------------------------------------------------------- what students see

def engine_results(status="graded", message="", visibility="after_published", flags=()) -> dict:
    tests = [
        {"name": "Part 1: test_a", "score": 1.0, "max_score": 1.0, "status": "passed", "visibility": visibility},
        {"name": "Part 2: test_b", "score": 0.0, "max_score": 3.0, "status": "failed", "visibility": visibility},
    ]
    score = 1.0 if status != "error" else 0.0
    output = "Part 1 Scaling: 1 / 1\nPart 2 Masking: 0 / 3" if status != "error" else \
        f"Your submission could not be graded ({status}): {message}"
    row = {"status": status, "message": message, "max_score": 4.0, "score": score}
    return {"score": score, "output": output, "visibility": "visible", "tests": tests,
            "extra_data": {"gradebook_row": row, "flags": list(flags)}}


def test_hidden_results_wait_for_publication_and_the_output_gives_no_score_away():
    shown = view.present(engine_results(), SPEC, 3.14159)
    assert [t["visibility"] for t in shown["tests"]] == ["after_published"] * 3
    summary = shown["tests"][0]
    assert summary["name"] == view.SUMMARY_TITLE and summary["output"] == engine_results()["output"]
    assert "score" not in summary and "max_score" not in summary
    assert shown["visibility"] == "after_published" and shown["stdout_visibility"] == "hidden"
    assert shown["output"] == view.GRADED_NOTE + view.LATER_NOTES["after_published"]
    assert "Part 1" not in shown["output"]
    assert shown["execution_time"] == 3.14 and shown["score"] == 1.0
    assert schema.problems(shown) == []


def test_a_part_shown_at_once_is_visible_while_the_summary_waits_for_the_most_guarded_part():
    spec = spec_with(visibilities={1: "visible", 2: "after_due_date"})
    shown = view.present(engine_results(visibility="from the engine"), spec, 1.0)
    assert view.most_guarded(spec) == "after_published"   # parts 3 to 6 keep the default
    assert shown["tests"][0]["visibility"] == "after_published"
    assert [t["visibility"] for t in shown["tests"][1:]] == ["from the engine"] * 2   # the engine's, kept


def test_the_at_once_text_says_which_parts_results_are_shown_at_once_and_when_the_others_come():
    """It agrees with the entries visible at once: a part made visible is shown now, not promised for later."""
    shown = view.present(engine_results(), spec_with(visibilities={1: "visible"}), 1.0)
    assert shown["output"] == (view.GRADED_NOTE + " The results of Part 1 are shown below; those of the "
                               "other parts will be shown here when your instructor publishes the grades.")
    every = spec_with(visibilities=dict.fromkeys(SPEC.numbers, "visible"))
    assert view.present(engine_results(), every, 1.0)["output"].endswith(" every part are shown below.")
    due = spec_with(visibilities={1: "visible", 2: "visible", **dict.fromkeys(SPEC.numbers[2:], "after_due_date")})
    assert view.results_note(due) == (" The results of Parts 1 and 2 are shown below; those of the other "
                                                 "parts will be shown here after the due date.")


def test_what_students_see_at_each_moment_follows_each_entrys_visibility():
    results = engine_results(flags=["a flag"])
    results["tests"][0]["visibility"] = "visible"   # Part 1 shown at once, as a part made visible is
    shown = view.present(results, SPEC, 1.0)
    now = view.seen_by_students(shown, "visible")
    published = view.seen_by_students(shown, "after_published")
    assert now == ["Part 1: test_a"]
    assert published == [view.SUMMARY_TITLE, "Part 1: test_a", "Part 2: test_b"]   # never the flags
    report = run_autograder.report(shown)
    assert "  with it, at once: 1 test entry (Part 1: test_a)\n" in report
    assert "  after publication: 3 test entries" in report


def test_never_shown_results_say_so_and_stdout_follows_show_stdout():
    spec = spec_with(show_hidden=False, show_stdout=True)
    shown = view.present(engine_results(visibility="hidden"), spec, 1.0)
    assert {t["visibility"] for t in shown["tests"]} == {"hidden"} and shown["visibility"] == "hidden"
    assert shown["stdout_visibility"] == "after_published"


@pytest.mark.parametrize("status", ["error", "timeout"])
def test_a_submission_that_could_not_be_graded_or_ran_out_of_time_is_told_why_at_once_and_nothing_more(status):
    message = "SyntaxError: invalid syntax (student/masking.py, line 3)" if status == "error" else \
        trusted.CALLS_AT_ONCE["timeouts"]
    shown = view.present(engine_results(status, message), SPEC, 1.0)
    assert shown["output"].startswith(f"Your submission was received; grading ended with {status}. Reason: {message}")
    assert [t["visibility"] for t in shown["tests"]] == ["after_published"] * 3   # the status changes nothing
    assert "Part 1" not in shown["output"] and "/ 3" not in shown["output"]


def test_flags_reach_the_instructor_in_an_entry_students_never_see():
    shown = view.present(engine_results(flags=["forbidden call: the manual path called x (test_a)"]),
                                    SPEC, 1.0)
    entry = shown["tests"][-1]
    assert entry["name"] == view.FLAGS_TITLE and entry["visibility"] == "hidden"
    assert "forbidden call" in entry["output"] and schema.problems(shown) == []


def test_points_possible_scales_the_score_as_otter_does():
    shown = view.present(engine_results(), spec_with(points_possible=20), 1.0)
    assert shown["score"] == pytest.approx(1.0 / 4.0 * 20)
    unscaled = view.present(engine_results(), spec_with(points_possible=4), 1.0)
    assert unscaled["score"] == 1.0


def test_presenting_leaves_the_engines_results_untouched():
    results = engine_results()
    before = copy.deepcopy(results)
    view.present(results, SPEC, 1.0)
    assert results == before
