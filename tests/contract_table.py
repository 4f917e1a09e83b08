"""The traceability table of the hidden suite (grading_tests/CONTRACT.md), read and checked.

Each hidden test function has one row: the test, the graded name whose docstring holds the sentence
it enforces, and that sentence. Nothing the suite or the spec decides is restated (a test's part is its
marker's, its points the spec's), so re-weighting a part leaves the table as it is. `problems()` lists
every way the table, the suite and the handout disagree; tests/test_contract.py asserts there are none.
`python -m tests.contract_table` prints a row to fill in for each hidden test that has none.
"""
from __future__ import annotations

import ast
import contextlib
import io
import re
import sys
from dataclasses import dataclass

import pytest

from autograder.stubs import GRADED_MODULES
from grader.paths import REPO, STUDENT_DIR

CONTRACT = REPO / "grading_tests" / "CONTRACT.md"
HEADER = "| hidden test | handout | sentence it enforces |"
ROW = re.compile(r"^\| `(?P<test>[\w.]+::\w+)` \| `(?P<where>[\w.?]+)` \| (?P<sentence>.*) \|$")


@dataclass(frozen=True)
class Row:
    test: str          # "test_part1_scaling.py::test_name"
    where: str         # "scaling.scaled_scores", "multihead.MultiHeadAttention.forward", or a module
    sentence: str


@dataclass(frozen=True)
class HiddenTest:
    test: str
    part: int


def table_rows(text: str | None = None) -> list[Row]:
    text = CONTRACT.read_text() if text is None else text
    rows = []
    for line in text.splitlines():
        match = ROW.match(line.strip())
        if match:
            rows.append(Row(match["test"], match["where"], match["sentence"].strip()))
    return rows


class _Collector:
    """pytest plugin: the hidden suite's items, collected only (nothing runs)."""

    def __init__(self):
        self.items = []

    def pytest_collection_modifyitems(self, items):
        self.items = list(items)


def hidden_tests() -> list[HiddenTest]:
    """Every hidden test function (its parametrizations together) with its part."""
    collector = _Collector()
    with contextlib.redirect_stdout(io.StringIO()):   # pytest's own lines are not the caller's output
        code = pytest.main([str(REPO / "grading_tests"), "--collect-only", "-qq", "-p", "no:cacheprovider",
                            f"--rootdir={REPO}", "-o", "addopts="], plugins=[collector])
    if code != 0:
        raise RuntimeError(f"collecting grading_tests failed (pytest exit {code}): run "
                           f"`python -m pytest grading_tests --collect-only` to see why")
    found: dict[str, HiddenTest] = {}
    for item in collector.items:
        name = f"{item.path.name}::{item.originalname}"
        found.setdefault(name, HiddenTest(name, item.get_closest_marker("part").args[0]))
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
            found.append(f"{test.test}: names no sentence of the handout (add its row to grading_tests/"
                         f"{CONTRACT.name}: `python -m tests.contract_table` prints it to fill in)")
    for row in rows:
        if row.test not in known:
            found.append(f"{row.test}: listed, but no such hidden test")
        if row.where not in texts:
            found.append(f"{row.test}: {row.where} is not a graded name of student/")
        elif _flat(row.sentence) not in texts[row.where]:
            found.append(f"{row.test}: the docstring of {row.where} does not say {row.sentence!r}")
    return found


def render(rows: list[Row]) -> str:
    lines = [HEADER, "|---|---|---|"]
    lines += [f"| `{r.test}` | `{r.where}` | {r.sentence} |" for r in rows]
    return "\n".join(lines)


def main() -> int:
    """Print a row to fill in (the graded name, the sentence) for every hidden test the table lacks."""
    listed = {row.test for row in table_rows()}
    missing = [Row(t.test, "module.name", "the sentence of its docstring it enforces") for t in hidden_tests()
               if t.test not in listed]
    if not missing:
        print(f"every hidden test has its row in grading_tests/{CONTRACT.name}")
        return 0
    print(f"Add to the first table of grading_tests/{CONTRACT.name}, each with the graded name and the sentence "
          f"it enforces:\n")
    print("\n".join(render(missing).splitlines()[2:]))
    return 1


if __name__ == "__main__":
    sys.exit(main())
