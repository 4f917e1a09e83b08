"""What Gradescope shows a student: the engine's results.json, with the instructor's otter_config applied.

    present(results, settings, seconds) -> the results.json Gradescope reads

Every test of the grading suite is a hidden test (students have their own public checks in student/tests),
so each result takes the visibility the instructor chose for hidden tests (config.Settings: otter's
show_hidden, after_published by default); a test the engine tags "public" stays visible. While hidden
results are not shown, the top-level output would give the score away, so it says only whether the
submission was graded, and why not when it could not be (the student can fix that before the deadline);
the engine's summary (points per part, which part to fix first) becomes the first test entry, worth no
points, shown with the hidden tests.
The autograder's stdout follows otter's show_stdout. points_possible scales the score as otter does.
"""
from __future__ import annotations

import copy

from autograder.otter.config import Settings

PUBLIC_TAG = "public"
SUMMARY_TITLE = "Summary by part (worth no points of its own)"
GRADED_NOTE = ("Your submission was received and graded. The results of the hidden tests will be shown "
               "here when your instructor publishes the grades.")
NEVER_SHOWN_NOTE = "Your submission was received and graded."


def _row(results: dict) -> dict:
    return (results.get("extra_data") or {}).get("gradebook_row") or {}


def graded(results: dict) -> bool:
    return _row(results).get("status", "graded") == "graded"


def immediate_output(results: dict, settings: Settings) -> str:
    """What a student may read at once: that grading happened, or why it could not."""
    if not graded(results):
        return results.get("output", "") or "Your submission could not be graded."
    return GRADED_NOTE if settings.show_hidden else NEVER_SHOWN_NOTE


def present(results: dict, settings: Settings, seconds: float) -> dict:
    """A copy of the engine's results.json as Gradescope should show it; `seconds`: the grading's wall time."""
    shown = copy.deepcopy(results)
    hidden = settings.hidden_test_visibility
    for test in shown.get("tests", []):
        test["visibility"] = "visible" if PUBLIC_TAG in test.get("tags", ()) else hidden
    # The assignment-level default: a test without its own visibility is a hidden one.
    shown["visibility"] = hidden
    shown["stdout_visibility"] = settings.stdout_visibility
    shown["output"] = immediate_output(results, settings)
    if graded(results) and results.get("output"):
        shown["tests"] = [{"name": SUMMARY_TITLE, "output": results["output"], "visibility": hidden},
                          *shown.get("tests", [])]
    possible = _row(results).get("max_score") or sum(t.get("max_score", 0) for t in results.get("tests", []))
    if settings.points_possible is not None and possible and settings.points_possible != possible:
        shown["score"] = results["score"] / possible * settings.points_possible
    shown["execution_time"] = round(seconds, 2)
    return shown
