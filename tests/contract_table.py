"""The traceability table of the hidden suite (grading_tests/CONTRACT.md), read and checked.

Each hidden test function has one row: the test, its part, the points it is worth on a grader
without a GPU, the graded name whose docstring holds the sentence it enforces, and that sentence.
`problems()` lists every way the table and the suite disagree; tests/test_contract.py asserts
there are none. `python -m tests.contract_table` prints the rows as they should be (points
recomputed), for pasting after a change to the suite.
"""
from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass

import pytest

from autograder.paths import REPO, STUDENT_DIR
from autograder.scoring import TestOutcome, score_outcomes
from autograder.stubs import GRADED_MODULES

CONTRACT = REPO / "grading_tests" / "CONTRACT.md"
HEADER = "| hidden test | part | points (CPU) | handout | sentence it enforces |"
ROW = re.compile(r"^\| `(?P<test>[\w.]+::\w+)` \| (?P<part>\d) \| (?P<points>[\d.]+) \| `(?P<where>[\w.]+)` \| "
                 r"(?P<sentence>.*) \|$")


@dataclass(frozen=True)
class Row:
    test: str          # "test_part1_scaling.py::test_name"
    part: int
    points: float
    where: str         # "scaling.scaled_scores", "multihead.MultiHeadAttention.forward", or a module
    sentence: str


@dataclass(frozen=True)
class HiddenTest:
    test: str
    part: int
    points: float      # all its parametrizations together, on a grader without a GPU


def table_rows(text: str | None = None) -> list[Row]:
    text = CONTRACT.read_text() if text is None else text
    rows = []
    for line in text.splitlines():
        match = ROW.match(line.strip())
        if match:
            rows.append(Row(match["test"], int(match["part"]), float(match["points"]), match["where"],
                            match["sentence"].strip()))
    return rows


class _Collector:
    """pytest plugin: the hidden suite's items, collected only (nothing runs)."""

    def __init__(self):
        self.items = []

    def pytest_collection_modifyitems(self, items):
        self.items = list(items)


def hidden_tests() -> list[HiddenTest]:
    """Every hidden test function with its part and its points on this (GPU-less) machine."""
    collector = _Collector()
    code = pytest.main([str(REPO / "grading_tests"), "--collect-only", "-qq", "-p", "no:cacheprovider",
                        f"--rootdir={REPO}", "-o", "addopts="], plugins=[collector])
    if code != 0:
        raise RuntimeError(f"collecting grading_tests failed (pytest exit {code})")
    outcomes, names = [], []
    for item in collector.items:
        weight = item.get_closest_marker("weight")
        skipped = any(mark.args and mark.args[0] for mark in item.iter_markers("skipif"))
        outcomes.append(TestOutcome(item.nodeid, item.get_closest_marker("part").args[0],
                                    weight.args[0] if weight else 1, "skipped" if skipped else "passed"))
        names.append(f"{item.path.name}::{item.originalname}")
    score_outcomes(outcomes)
    found: dict[str, HiddenTest] = {}
    for name, outcome in zip(names, outcomes, strict=True):
        before = found.get(name, HiddenTest(name, outcome.part, 0.0))
        found[name] = HiddenTest(name, outcome.part, before.points + outcome.max_score)
    return list(found.values())


def docstrings() -> dict[str, str]:
    """'module', 'module.function', 'module.Class', 'module.Class.method' -> its docstring in student/,
    whitespace collapsed."""
    found = {}
    for file_name in GRADED_MODULES:
        module = file_name.removesuffix(".py")
        tree = ast.parse((STUDENT_DIR / file_name).read_text())
        found[module] = _flat(ast.get_docstring(tree))

        def visit(node, prefix):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.ClassDef)):
                    found[prefix + child.name] = _flat(ast.get_docstring(child))
                    visit(child, prefix + child.name + ".")

        visit(tree, module + ".")
    return found


def _flat(text: str | None) -> str:
    return " ".join((text or "").split())


def problems(rows: list[Row], tests: list[HiddenTest], texts: dict[str, str]) -> list[str]:
    """Every disagreement between the table, the suite and the handout's docstrings."""
    found = []
    by_test = {}
    for row in rows:
        if row.test in by_test:
            found.append(f"{row.test}: listed twice")
        by_test[row.test] = row
    known = {test.test for test in tests}
    for test in tests:
        row = by_test.get(test.test)
        if row is None or not row.sentence:
            found.append(f"{test.test}: names no sentence of the handout (add a row to {CONTRACT.name})")
            continue
        if row.part != test.part or abs(row.points - round(test.points, 2)) > 0.005:
            found.append(f"{test.test}: the table says part {row.part}, {row.points:g} points; the suite gives "
                         f"part {test.part}, {round(test.points, 2):g} points")
    for row in rows:
        if row.test not in known:
            found.append(f"{row.test}: listed, but no such hidden test")
        if row.where not in texts:
            found.append(f"{row.test}: {row.where} is not a graded name of student/")
        elif _flat(row.sentence) not in texts[row.where]:
            found.append(f"{row.test}: the docstring of {row.where} does not say {row.sentence!r}")
    return found


def render(rows: list[Row]) -> str:
    lines = [HEADER, "|---|---|---|---|---|"]
    lines += [f"| `{r.test}` | {r.part} | {r.points:.2f} | `{r.where}` | {r.sentence} |" for r in rows]
    return "\n".join(lines)


def main() -> int:
    """Print the table with the part and points recomputed from the suite (sentences kept)."""
    rows = {row.test: row for row in table_rows()}
    fresh = [Row(t.test, t.part, round(t.points, 2), rows[t.test].where if t.test in rows else "?",
                 rows[t.test].sentence if t.test in rows else "") for t in hidden_tests()]
    print(render(fresh))
    return 0


if __name__ == "__main__":
    sys.exit(main())
