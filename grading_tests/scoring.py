"""Points: every test belongs to one part; the parts sum to 100. Also the feedback's summary.

A test carries `@pytest.mark.part(N)` and optionally `@pytest.mark.weight(W)` (default 1).
A part's points are shared among its tests that ran, in proportion to their weights;
a skipped test (a CUDA test on a machine without a GPU, an inconclusive device check) is
worth 0 and does not count, so the total is 100 on every machine and a correct submission
always scores 100.

The summary names the root of a cascade: a part whose functions other parts call (PART_USES)
fails, and so do parts that call it, so the student fixes the root first.
"""
from __future__ import annotations

from dataclasses import dataclass

PART_POINTS = {1: 10, 2: 30, 3: 10, 4: 10, 5: 25, 6: 15}
# Titles as in student/parts.py (a project test keeps the two equal). The trusted side
# never imports the student package, so it keeps its own copy.
PART_TITLES = {
    1: "Scaling",
    2: "Masking and attention weights",
    3: "Splitting and merging heads",
    4: "Padding-mask expansion",
    5: "Multi-head and cross-attention",
    6: "Parity with PyTorch's fused SDPA",
}
# The parts whose graded functions each part's code calls (as the reference does: attention
# scales with scaled_scores; the module splits, merges, masks and attends; the fused path is
# the module's forward with another attention step).
PART_USES = {1: (), 2: (1,), 3: (), 4: (), 5: (1, 2, 3, 4), 6: (2, 3, 4, 5)}
MESSAGE_LIMIT = 1000  # characters of a failure message shown to the student


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
class Report:
    tests: list[TestOutcome]
    part_scores: dict[int, float]
    part_max: dict[int, float]

    @property
    def score(self) -> float:
        return round(sum(self.part_scores.values()), 4)

    @property
    def max_score(self) -> float:
        return round(sum(self.part_max.values()), 4)


def score_outcomes(outcomes: list[TestOutcome]) -> Report:
    """Fill in score and max_score of every outcome and add them up per part."""
    for outcome in outcomes:
        if outcome.part not in PART_POINTS:
            raise ValueError(f"{outcome.name}: unknown part {outcome.part}")
    part_scores, part_max = {}, {}
    for part, points in PART_POINTS.items():
        ran = [o for o in outcomes if o.part == part and o.status != "skipped"]
        total_weight = sum(o.weight for o in ran)
        for outcome in (o for o in outcomes if o.part == part):
            outcome.max_score = points * outcome.weight / total_weight if outcome.status != "skipped" else 0.0
            outcome.score = outcome.max_score if outcome.status == "passed" else 0.0
        part_max[part] = float(points) if ran else 0.0
        part_scores[part] = round(sum(o.score for o in ran), 4)
    return Report(outcomes, part_scores, part_max)


def parts_using(part: int) -> set[int]:
    """Every part that calls `part`'s functions, directly or through another part."""
    users = {user for user, used in PART_USES.items() if part in used}
    for user in list(users):
        users |= parts_using(user)
    return users


def _listed(parts) -> str:
    names = [str(p) for p in sorted(parts)]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def cascade_notes(report: Report) -> list[str]:
    """'Part 3 fails; Parts 5 and 6 use it: fix it first.' for every failing part that failing parts build on,
    unless it builds on a failing part itself (then that one is the root to name)."""
    failing = {o.part for o in report.tests if o.status == "failed"}
    notes = []
    for part in sorted(failing):
        users = parts_using(part) & failing
        builds_on_failing = any(part in parts_using(other) for other in failing if other != part)
        if users and not builds_on_failing:
            plural = "s" if len(users) > 1 else ""
            notes.append(f"Part {part} ({PART_TITLES[part]}) fails; Part{plural} {_listed(users)} "
                         f"use{'' if plural else 's'} it: fix it first, their failures may come from it.")
    return notes


def clip_message(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + " [...]"


def gradescope_results(report: Report, extra_output: str = "") -> dict:
    """The report in Gradescope's results.json schema (also the student's feedback)."""
    tests = []
    for o in report.tests:
        title = PART_TITLES[o.part]
        output = {"passed": "Passed.", "skipped": f"Skipped: {o.message}"}.get(o.status, o.message)
        tests.append({
            "name": f"Part {o.part} ({title}): {o.name}",
            "score": round(o.score, 4),
            "max_score": round(o.max_score, 4),
            "status": o.status,
            "output": clip_message(output),
            "visibility": "visible",
        })
    lines = [f"Part {p} {PART_TITLES[p]}: {report.part_scores[p]:g} / {report.part_max[p]:g}" for p in PART_POINTS]
    notes = cascade_notes(report)
    summary = "\n".join(lines) + ("\n\n" + "\n".join(notes) if notes else "")
    return {
        "score": report.score,
        "output": summary + (f"\n\n{extra_output}" if extra_output else ""),
        "tests": tests,
        "visibility": "visible",
    }

