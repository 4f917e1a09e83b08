"""What Gradescope shows a student, and when: the engine's results.json with the course's settings applied.

    present(results, spec, seconds) -> the results.json Gradescope reads
    seen_by_students(shown, moment)  -> the entries a student reads at that moment ("visible": at once)

Every test entry keeps the visibility the spec gives its part (grader/scoring.py writes it: a part's own
`visibility`, else show_hidden's after_published or hidden). What the student may read at once is fixed, and
never depends on a status the student's code controls: that the submission was graded, or, when it could
not be graded or ran out of time, the gradebook's one-line reason (which holds no score, and of hidden calls
only the kind of trouble they met, never which or how many: grader/run/trusted.py's judge), so it can be
fixed before the deadline; and when the parts' results are shown, which agrees with the entries visible at
once. The engine's summary (points per part, which part to fix first) becomes the first entry, worth no
points, shown when the most guarded part is; the instructor's flags become an entry students never see
(Gradescope's "hidden": instructors see it in full). The autograder's stdout follows show_stdout;
points_possible scales the score as otter does.
"""
from __future__ import annotations

import copy

from assignment.spec import VISIBILITIES, Spec
from grader.row import Row, of_results
from grader.scoring import is_public_check, parts_listed

SUMMARY_TITLE = "Summary by part (worth no points of its own)"
FLAGS_TITLE = "Flagged for the instructor (never shown to students)"
GRADED_NOTE = "Your submission was received and graded."
# When the results not shown at once will be (the parts' visibilities, the latest that applies).
WHEN = {"after_published": "when your instructor publishes the grades", "after_due_date": "after the due date"}
LATER_NOTES = {when: f" The results of the hidden tests will be shown here {words}." for when, words in WHEN.items()}
REASON_STATUSES = ("error", "timeout")


def most_guarded(spec: Spec) -> str:
    """The visibility of what concerns every part (the summary): that of the most guarded part."""
    return max((spec.visibility(number) for number in spec.numbers), key=VISIBILITIES.index)


def immediate_output(results: dict, spec: Spec) -> str:
    """What a student may read at once: that grading happened and the gradebook's one-line message, which holds
    no score: for an error or a timeout, why; for graded code, what was not (a module that could not be imported)."""
    row = of_results(results) or Row(status="graded")
    status = row.status
    note = GRADED_NOTE if status == "graded" else f"Your submission was received; grading ended with {status}."
    if row.message:
        note += (" Reason: " if status in REASON_STATUSES else " Note: ") + row.message
    return note + public_checks_note(results) + results_note(spec)


def results_note(spec: Spec) -> str:
    """When the parts' results are shown, as their visibilities say: those of the parts made visible below, at once;
    the others' when the first of the later moments that applies comes ("" when none ever is)."""
    shown = [number for number in spec.numbers if spec.visibility(number) == "visible"]
    later = next((moment for moment in WHEN if moment in {spec.visibility(n) for n in spec.numbers}), None)
    if len(shown) == len(spec.numbers):
        return " The results of every part are shown below."
    if not shown:
        return LATER_NOTES[later] if later else ""
    now = f" The results of Part{'s' * (len(shown) > 1)} {parts_listed(shown)} are shown below"
    return now + (f"; those of the other parts will be shown here {WHEN[later]}." if later else ".")


def public_checks_note(results: dict) -> str:
    """How many of the handout's public checks pass on the upload (their entries, shown at once, say which)."""
    checks = [test for test in results.get("tests", []) if is_public_check(test)]
    if not checks:
        return ""
    passed = sum(test.get("status") == "passed" for test in checks)
    return (f" {passed} of the handout's {len(checks)} public checks (python -m student.check) pass on what you "
            f"uploaded: they are listed below, worth no points.")


def present(results: dict, spec: Spec, seconds: float) -> dict:
    """A copy of the engine's results.json as Gradescope should show it; `seconds`: the grading's wall time."""
    shown = copy.deepcopy(results)
    summary_visibility = most_guarded(spec)
    shown["visibility"] = summary_visibility
    shown["stdout_visibility"] = "after_published" if spec.settings.show_stdout else "hidden"
    shown["output"] = immediate_output(results, spec)
    tests = shown.get("tests", [])
    if results.get("output"):
        tests.insert(0, {"name": SUMMARY_TITLE, "output": results["output"], "visibility": summary_visibility})
    flags = (results.get("extra_data") or {}).get("flags") or []
    if flags:
        tests.append({"name": FLAGS_TITLE, "output": "\n".join(f"- {flag}" for flag in flags), "visibility": "hidden"})
    shown["tests"] = tests
    possible = possible_points(results)
    target = spec.settings.points_possible
    if target is not None and possible and target != possible:
        shown["score"] = results["score"] / possible * target
    shown["execution_time"] = round(seconds, 2)
    return shown


def possible_points(results: dict) -> float:
    """The points a results.json is out of: its row's max_score, else the sum of its tests'."""
    row = of_results(results)
    return (row and row.max_score) or round(sum(t.get("max_score", 0) for t in results.get("tests", [])), 2)


def seen_by_students(shown: dict, moment: str) -> list[str]:
    """The names of the test entries of a presented results.json a student reads at `moment`, one of VISIBILITIES
    but "hidden": "visible" (at once), "after_due_date" or "after_published" (each also shows what an earlier
    moment shows; an entry without a visibility of its own follows the results' top-level one)."""
    shown_at = VISIBILITIES[:VISIBILITIES.index(moment) + 1]
    default = shown.get("visibility", "visible")
    return [str(test.get("name", "?")) for test in shown.get("tests", [])
            if test.get("visibility", default) in shown_at]
