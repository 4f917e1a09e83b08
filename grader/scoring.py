"""Points: every test belongs to one part of the spec; the parts sum to its total. Also the feedback's summary.

A test carries `@pytest.mark.part(N)` and optionally `@pytest.mark.weight(W)` (default 1).
A part's points are shared among its tests that ran, in proportion to their weights, each
share rounded to POINT_DECIMALS places so that the shares add up to exactly the part's points;
a skipped test (a CUDA test on a machine without a GPU) is
worth 0 and does not count, so the total is 100 on every machine and a correct submission
always scores 100.

The results follow Gradescope's results.json specification: every test listed is "passed" or
"failed"; the tests that did not run are named in one informational entry worth no points; a
submission that could not be graded gets one entry per part (its maximum kept), led by the error.

The summary names the root of a cascade: a part whose functions other parts call (the spec's `uses`)
fails, and so do parts that call it, so the student fixes the root first.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from assignment.spec import SPEC, VISIBILITIES

# From the assignment's one declaration (assignment/assignment.toml).
PART_POINTS = SPEC.points
STATUSES = ("graded", "error", "timeout")   # of one submission's grading (its gradebook row and outcome)
PART_TITLES = SPEC.titles
MESSAGE_LIMIT = 1000  # characters of a failure message shown to the student
POINT_DECIMALS = 4    # a test's points are shown (and added up) to this many decimal places
NOT_RUN_TITLE = "Not run on this grader (worth 0 points; the part's other tests share its points)"
NOT_RUN_SHOWN = 10    # distinct reasons listed in that entry


@dataclass
class TestOutcome:
    __test__ = False   # not a pytest test class, despite its name
    name: str
    part: int
    weight: float
    status: str          # "passed", "failed" or "skipped"
    message: str = ""
    score: float = 0.0
    max_score: float = 0.0


@dataclass
class ScoreSheet:
    tests: list[TestOutcome]
    part_scores: dict[int, float]
    part_max: dict[int, float]

    @property
    def score(self) -> float:
        return round(sum(self.part_scores.values()), 4)

    @property
    def max_score(self) -> float:
        return round(sum(self.part_max.values()), 4)


def shares(points: float, weights: list[float]) -> list[float]:
    """points split in proportion to weights, each share rounded to POINT_DECIMALS places so that the
    shares add up to exactly points (largest remainder first: no rounding error to leak into the total)."""
    unit = 10 ** POINT_DECIMALS
    total_weight = sum(weights)
    if not total_weight:
        return [0.0] * len(weights)
    exact = [round(points * unit) * weight / total_weight for weight in weights]
    units = [math.floor(share) for share in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: (units[i] - exact[i], i))
    for index in by_remainder[:round(points * unit) - sum(units)]:
        units[index] += 1
    return [share / unit for share in units]


def score_outcomes(outcomes: list[TestOutcome]) -> ScoreSheet:
    """Fill in score and max_score of every outcome and add them up per part."""
    for outcome in outcomes:
        if outcome.part not in PART_POINTS:
            raise ValueError(f"{outcome.name}: unknown part {outcome.part}")
    part_scores, part_max = {}, {}
    for part, points in PART_POINTS.items():
        ran = [o for o in outcomes if o.part == part and o.status != "skipped"]
        for outcome in (o for o in outcomes if o.part == part and o.status == "skipped"):
            outcome.max_score = outcome.score = 0.0
        for outcome, share in zip(ran, shares(points, [o.weight for o in ran]), strict=True):
            outcome.max_score = share
            outcome.score = share if outcome.status == "passed" else 0.0
        part_max[part] = float(points) if ran else 0.0
        part_scores[part] = round(sum(o.score for o in ran), POINT_DECIMALS)
    return ScoreSheet(outcomes, part_scores, part_max)


def parts_using(part: int) -> set[int]:
    """Every part that calls `part`'s functions, directly or through another part (the spec's `uses`)."""
    return SPEC.parts_using(part)


def parts_listed(parts) -> str:
    """"1", "1 and 2", "1, 2 and 3": part numbers in a sentence."""
    names = [str(p) for p in sorted(parts)]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def cascade_notes(report: ScoreSheet) -> list[str]:
    """'Part 3 fails; Parts 5 and 6 use it: fix it first.' for every failing part that failing parts build on,
    unless it builds on a failing part itself (then that one is the root to name)."""
    failing = {o.part for o in report.tests if o.status == "failed"}
    notes = []
    for part in sorted(failing):
        users = parts_using(part) & failing
        builds_on_failing = any(part in parts_using(other) for other in failing if other != part)
        if users and not builds_on_failing:
            plural = "s" if len(users) > 1 else ""
            notes.append(f"Part {part} ({PART_TITLES[part]}) fails; Part{plural} {parts_listed(users)} "
                         f"use{'' if plural else 's'} it: fix it first, "
                         f"{'their' if plural else 'its'} failures may come from it.")
    return notes


def clip_message(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + " [...]"


def could_not_grade(status: str, message: str) -> str:
    """The first line of the feedback of a submission that could not be graded."""
    return f"Your submission could not be graded ({status}): {message or 'no details'}"


def _part_lines(part_scores: dict[int, float]) -> list[str]:
    return [f"Part {p} {PART_TITLES[p]}: {part_scores.get(p, 0.0):g} / {PART_POINTS[p]:g}" for p in PART_POINTS]


def _not_run_entry(skipped: list[TestOutcome]) -> dict:
    """One informational entry (no points, no status) naming the tests that did not run and why."""
    def reason(outcome):
        return outcome.message or "no reason given"

    def line(text, count):
        alike = [o for o in skipped if reason(o) == text]
        if count == 1:
            return f"- Part {alike[0].part}, {alike[0].name}: {text}"
        parts = sorted({o.part for o in alike})
        return f"- {count} tests (Part{'s' if len(parts) > 1 else ''} {', '.join(map(str, parts))}): {text}"

    shown = Counter(reason(o) for o in skipped).most_common(NOT_RUN_SHOWN)
    lines = [line(text, count) for text, count in shown]
    if len(skipped) > sum(count for _, count in shown):
        lines.append(f"- and {len(skipped) - sum(count for _, count in shown)} more")
    return {"name": NOT_RUN_TITLE, "output": clip_message("\n".join(lines)),
            "visibility": max((SPEC.visibility(o.part) for o in skipped), key=VISIBILITIES.index)}


def tags(part: int, test: str | None = None) -> list[str]:
    """What an entry of results.json is about, in Gradescope's own `tags` field: its part, and its hidden test
    (the test's id, parameters included). The entry's name is for people only: nothing parses it."""
    return [f"part{part}", *([f"test:{test}"] if test else [])]


PUBLIC_CHECK_TAG = "public-check"   # an entry of the handout's public checks (grader/run/public_checks.py): no points


def is_public_check(entry: dict) -> bool:
    return PUBLIC_CHECK_TAG in (entry.get("tags") or ())


def entry_part(entry: dict) -> int | None:
    """The part of an entry of results.json (None: an entry of no part, as the tests not run)."""
    for tag in entry.get("tags") or _untagged(entry):
        if tag.startswith("part") and tag[4:].isdigit():
            return int(tag[4:])
    return None


def entry_test(entry: dict) -> str | None:
    """The hidden test of an entry of results.json, parameters included (None: an entry of a whole part)."""
    tagged = entry.get("tags") or _untagged(entry)
    return next((tag.removeprefix("test:") for tag in tagged if tag.startswith("test:")), None)


_UNTAGGED = re.compile(r"^Part (\d+) \([^)]*\)(?:: (.+))?$")


def _untagged(entry: dict) -> list[str]:
    """The tags of an entry written before results carried them (an output folder graded by an earlier version
    and resumed): read once from the name it had then, "Part 1 (Scaling): test_id[param]"."""
    match = _UNTAGGED.match(str(entry.get("name", "")))
    return tags(int(match.group(1)), match.group(2)) if match else []


def gradescope_results(report: ScoreSheet, extra_output: str = "", lead: str = "") -> dict:
    """The report in Gradescope's results.json schema (also the student's feedback); `lead`: what went wrong
    while grading (a timeout, say), first in the output. Each test is shown when the spec shows its part."""
    tests = [{
        "name": f"Part {o.part} ({PART_TITLES[o.part]}): {o.name}",
        "number": f"{o.part}.{index}",
        "tags": tags(o.part, o.name),
        "score": o.score,
        "max_score": o.max_score,
        "status": o.status,
        "output": clip_message("Passed." if o.status == "passed" else o.message),
        "visibility": SPEC.visibility(o.part),
    } for index, o in _numbered(report.tests) if o.status != "skipped"]
    skipped = [o for o in report.tests if o.status == "skipped"]
    if skipped:
        tests.append(_not_run_entry(skipped))
    notes = cascade_notes(report)
    summary = "\n".join(_part_lines(report.part_scores)) + ("\n\n" + "\n".join(notes) if notes else "")
    return {
        "score": report.score,
        "output": "\n\n".join(filter(None, [lead, summary, extra_output])),
        "tests": tests,
        "visibility": "visible",
    }


def error_results(status: str, message: str, extra_output: str = "") -> dict:
    """The results of a submission that could not be graded (nothing imports, a broken upload, a timeout at
    import): led by the error, said once; nothing is earned, and one entry per part keeps the part's maximum,
    so the student sees what the work is worth."""
    earned = dict.fromkeys(PART_POINTS, 0.0)
    lead = could_not_grade(status, message)
    tests = [{"name": f"Part {p} ({PART_TITLES[p]})", "number": f"{p}", "tags": tags(p), "score": 0.0,
              "max_score": float(PART_POINTS[p]),
              "status": "failed", "output": "Not graded: see the error at the top.", "visibility": SPEC.visibility(p)}
             for p in PART_POINTS]
    lines = [lead, "", *_part_lines(earned)]
    return {"score": round(sum(earned.values()), POINT_DECIMALS),
            "output": "\n".join(lines) + (f"\n\n{extra_output}" if extra_output else ""),
            "tests": tests, "visibility": "visible"}


def _numbered(outcomes: list[TestOutcome]):
    """(its place in its part, from 1, outcome) for each outcome: Gradescope's `number`, part.place."""
    seen: dict[int, int] = {}
    for outcome in outcomes:
        seen[outcome.part] = seen.get(outcome.part, 0) + 1
        yield seen[outcome.part], outcome
