"""What Gradescope runs for each submission: grade ROOT/submission, write ROOT/results/results.json.

    python -m grader.gradescope.run_autograder [ROOT]      (ROOT: /autograder unless given)

Gradescope's layout (its "Autograder Specifications"): ROOT/source holds autograder.zip unpacked (this
package, the engine, the hidden suite, otter_config.json), ROOT/submission the student's upload unpacked,
ROOT/submission_metadata.json the submission's details; Gradescope reads ROOT/results/results.json. The
course's settings are those of the spec autograder.zip carries (ROOT/source/assignment/assignment.toml,
resolved at build time).
The run_autograder script of autograder.zip (autograder.otter.image) starts this module from ROOT/source.

No Jupyter kernel, no notebook and no otter import: the batch command grades the student/ package
(engine_bridge), view applies the course's settings, course_policies its submission budget and late
policy (from submission_metadata.json), and stdout (shown to instructors,
and to students only under show_stdout) gets a short report, with any breach of Gradescope's specification.
When the engine itself fails, the student gets a result saying so and the exit status is 1, as otter does.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
from collections.abc import Set as AbstractSet

from assignment import spec as assignment_spec
from grader.gradescope import course_policies, engine_bridge, schema, view
from grader.row import Row, of_results
from grader.sanitize import valid_text

DEFAULT_ROOT = pathlib.Path("/autograder")
ENGINE_FAILED = ("The autograder could not grade this submission because of a problem on the grader's side, "
                 "not in your code. Your instructor can see the details; please let them know.")


def grade(root: pathlib.Path, *, skip: AbstractSet[str] = frozenset()) -> dict:
    """The results.json for ROOT/submission, as Gradescope should show it.
    skip: top-level names in the submission folder that are not the student's (otter run adds some).
    Raises engine_bridge.GradingFailed or SpecError, which are the instructor's to fix."""
    start = time.perf_counter()
    spec = assignment_spec.load(root / "source" / "assignment" / assignment_spec.SPEC_FILE.name)
    # Gradescope's files beside the submission (its metadata holds earlier runs' feedback): the grader's alone.
    private = [root / "submission_metadata.json", root / "submission", root / "results"]
    metadata = course_policies.metadata(root)
    allowance = course_policies.allowance(metadata, spec.settings)
    if not allowance.counts and spec.settings.over_budget == "keep_last":   # past the budget: not even graded
        return course_policies.not_counted(allowance, time.perf_counter() - start)
    try:
        results = engine_bridge.grade_submission(root / "submission", root / "source", skip=skip, private=private,
                                                 public_checks=spec.settings.public_checks)
    except engine_bridge.GradingFailed:
        if allowance.counts:
            raise
        return course_policies.not_counted(allowance, time.perf_counter() - start)   # never a lower grade
    shown = view.present(results, spec, time.perf_counter() - start)
    if not allowance.counts:
        return course_policies.not_counted(allowance, time.perf_counter() - start, shown)
    return course_policies.applied(shown, metadata, spec.settings)


def failure_results(seconds: float) -> dict:
    return {"score": 0.0, "execution_time": round(seconds, 2), "output": ENGINE_FAILED, "visibility": "visible",
            "stdout_visibility": "hidden", "tests": []}


def report(results: dict) -> str:
    """The instructor's view in Gradescope's autograder output: score, per-part summary, isolation."""
    row = of_results(results) or Row(status="graded", isolation="?")
    lines = [f"Graded by the attention assignment's engine: {results['score']:g} points "
             f"({row.status}; {results['execution_time']:g} s; isolation: {row.isolation})"]
    if row.message:
        lines.append(f"Reason: {row.message}")
    lines += [f"  part{number}: {points:g}" for number, points in sorted(row.parts.items())]
    if row.environment:   # so that the score can be reproduced
        lines.append(f"Graded on: {row.environment}; suite {row.graded_with}")
    if (results.get("extra_data") or {}).get(course_policies.COUNTED) is False:
        lines.insert(0, "Past the course's submission budget: not counted (the score is the last counted one's)")
    lines.append(f"Students see now: {results['output']}")
    for moment, words in (("visible", "with it, at once"), ("after_due_date", "after the due date"),
                          ("after_published", "after publication")):
        entries = view.seen_by_students(results, moment)
        if entries or moment == "after_published":
            shown = "; ".join(entries[:3]) + (f"; and {len(entries) - 3} more" if len(entries) > 3 else "")
            lines.append(f"  {words}: {len(entries)} test entr{'y' if len(entries) == 1 else 'ies'}"
                         + (f" ({shown})" if entries else ""))
    return "\n".join(lines)


def write_results(root: pathlib.Path, results: dict) -> pathlib.Path:
    path = root / "results" / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(valid_text(results), indent=2))
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.gradescope.run_autograder", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", nargs="?", type=pathlib.Path, default=DEFAULT_ROOT,
                        help="the folder laid out as Gradescope's /autograder (default: /autograder)")
    root = parser.parse_args(argv).root.resolve()
    start = time.perf_counter()
    try:
        results = grade(root)
    except (engine_bridge.GradingFailed, assignment_spec.SpecError) as error:
        write_results(root, failure_results(time.perf_counter() - start))
        print(f"The autograder failed (the student was told it is not their fault):\n{error}")
        return 1
    write_results(root, results)
    print(report(results))
    found = schema.problems(results)
    if found:   # written all the same: Gradescope reads what it can, and the instructor sees what it cannot
        print(schema.summary(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
