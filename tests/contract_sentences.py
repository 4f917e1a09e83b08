"""The contract map's one home: every sentence of the handout's docstrings -> the tests enforcing it.

grading_tests/CONTRACT.md holds one table written by hand, one row per sentence of the docstring of every
graded name in student/ (split as `sentences()` splits them): the sentence, the hidden tests that enforce it,
and the bugs of the zoo (autograder/zoo/bugs.py) that break it. Each link of a test to a sentence is written
there once; the per-test view above it is derived from it (tests/contract_table.py). `problems()` lists every
way that table disagrees with the handout, the hidden suite and the zoo; tests/test_contract.py asserts there
are none, and, on the engine-graded zoo, that each bug listed fails one of its sentence's tests.

    enforced by   test functions (`test_name`) of the part where the sentence lives; or "every test of Part N"
                  (a rule every test enforces: the forbidden calls); or "not graded: why" for a sentence
                  that explains rather than requires
    broken by     zoo bugs (`name`) that break the sentence; at least one for every graded sentence

`python -m tests.contract_sentences` prints the table as it should be: the sentences of today's handout, each
with its row kept from the file (a reworded one: the row of the sentence it was), or, for a new one, empty
cells to fill in; for pasting after a docstring changes.
"""
from __future__ import annotations

import ast
import dataclasses
import difflib
import re
import sys
from dataclasses import dataclass

from assignment.spec import SPEC
from autograder import consistency
from autograder.stubs import GRADED_MODULES
from autograder.zoo import fresh
from autograder.zoo.bugs import BUGS
from grader.paths import REPO, STUDENT_DIR
from grader.scoring import entry_part, entry_test

CONTRACT = REPO / "grading_tests" / "CONTRACT.md"
HEADER = "| handout | sentence | enforced by | broken by |"
ROW = re.compile(r"^\| `(?P<where>[\w.]+)` \| (?P<sentence>.*) \| (?P<enforced>.*) \| (?P<broken>.*) \|$")
EVERY_TEST = re.compile(r"^every test of Part (\d+)$")
NOT_GRADED = "not graded: "
WRITE_VIEW = "python -m tests.contract_table --write"   # rewrites the per-test view (tests/contract_table.py)
_SECTION = re.compile(r"^(Args|Returns|Raises|Rules[^:]*):\s*(.*)$")
_ARGUMENT = re.compile(r"^    \S[^:]*:\s")
# A sentence ends at a full stop before a capital (or "(Capital"), or at ".)" before a capital.
_BOUNDARY = re.compile(r"(?<=[.])\s+(?=[A-Z]|\([A-Z])|(?<=\.\))\s+(?=[A-Z])")


@dataclass(frozen=True)
class SentenceRow:
    where: str             # "masking.causal_mask", "multihead.MultiHeadAttention.forward"
    sentence: str
    tests: tuple[str, ...]  # test function names, or ("every test of Part N",)
    why_not: str           # "" for a graded sentence
    bugs: tuple[str, ...]


@dataclass(frozen=True)
class HiddenTest:
    test: str   # "test_part1_scaling.py::test_name"
    part: int

    @property
    def name(self) -> str:
        return self.test.split("::")[1]


def hidden_tests() -> list[HiddenTest]:
    """Every hidden test function (its parametrizations together) with its part, in the suite's order."""
    found: dict[str, HiddenTest] = {}
    for item in consistency.collected_tests():
        name = f"{item.path.name}::{item.originalname}"
        found.setdefault(name, HiddenTest(name, item.get_closest_marker("part").args[0]))
    return list(found.values())


def _items(doc: str):
    """The docstring's paragraphs, section lines, arguments and bullets, each as one string."""
    current, section = [], None
    for line in doc.splitlines():
        header, stripped = _SECTION.match(line), line.strip()
        if (not stripped or header or stripped.startswith("- ") or (section == "Args" and _ARGUMENT.match(line))) \
                and current:
            yield " ".join(current)
            current = []
        if header:
            section = header.group(1)
            current += [header.group(2)] if header.group(2) else []
        elif stripped:
            current.append(stripped.removeprefix("- "))
    if current:
        yield " ".join(current)


def sentences() -> list[tuple[str, str]]:
    """(where, sentence) for every sentence of the docstrings of the graded names, in handout order."""
    found = []
    for file_name in GRADED_MODULES:
        module = file_name.removesuffix(".py")
        tree = ast.parse((STUDENT_DIR / file_name).read_text())

        def visit(node, prefix):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.ClassDef)):
                    doc = ast.get_docstring(child)
                    for item in _items(doc) if doc else []:
                        found.extend((prefix + child.name, s) for s in _BOUNDARY.split(" ".join(item.split())) if s)
                    visit(child, prefix + child.name + ".")

        visit(tree, module + ".")
    return found


def _names(cell: str) -> tuple[str, ...]:
    return tuple(re.findall(r"`([^`]+)`", cell))


def table_rows(text: str | None = None) -> list[SentenceRow]:
    text = CONTRACT.read_text() if text is None else text
    rows = []
    for line in text.splitlines():
        match = ROW.match(line.strip())
        if match:
            enforced = match["enforced"].strip()
            why_not = enforced.removeprefix(NOT_GRADED) if enforced.startswith(NOT_GRADED) else ""
            tests = () if why_not else tuple(filter(None, (t.strip().strip("`") for t in enforced.split(","))))
            rows.append(SentenceRow(match["where"], match["sentence"].strip(), tests, why_not, _names(match["broken"])))
    return rows


def parts_of(where: str) -> set[int]:
    """The parts where a sentence of this docstring lives. The module class's own docstring, its __init__ and its
    forward serve every part that grades one of its methods: forward(fused=True) is Part 6's path."""
    name = where.split(".", 1)[1]
    if name.split(".")[0] == SPEC.module_class and name.split(".")[-1] in (SPEC.module_class, "__init__", "forward"):
        return {part.number for part in SPEC.parts for graded in part.names if graded.startswith(SPEC.module_class)}
    return {part.number for part in SPEC.parts if name in part.names}


def enforces(row: SentenceRow, test: HiddenTest) -> bool:
    """Whether the row names this hidden test: by its function's name, in a part where the sentence lives (a name
    may be a test of another part too). A rule of every test of a part names no test."""
    return test.name in row.tests and test.part in parts_of(row.where)


def problems(rows: list[SentenceRow], handout: list[tuple[str, str]], tests: list[HiddenTest]) -> list[str]:
    """Every disagreement of the sentence table with the handout, the suite and the zoo."""
    found = []
    listed = [(row.where, row.sentence) for row in rows]
    found += [f"{where}: {sentence!r} has no row (add what enforces it)" for where, sentence in handout
              if (where, sentence) not in listed]
    found += [f"{where}: {sentence!r} is not a sentence of the handout (any more)" for where, sentence in listed
              if (where, sentence) not in handout]
    found += [f"{where}: {sentence!r} has two rows" for index, (where, sentence) in enumerate(listed)
              if (where, sentence) in listed[:index]]
    found += [f"{test.test}: no sentence names it: add `{test.name}` to the 'enforced by' cell of each sentence of "
              f"Part {test.part} it enforces (grading_tests/{CONTRACT.name}), then `{WRITE_VIEW}`"
              for test in tests if not any(enforces(row, test) for row in rows)]
    parts_of_test: dict[str, set[int]] = {}   # a test's name -> the parts of the files that hold one by that name
    for test in tests:
        parts_of_test.setdefault(test.name, set()).add(test.part)
    bugs = {bug.name: bug.part for bug in fresh(BUGS)}
    for row in rows:
        label, parts = f"{row.where}: {row.sentence[:60]!r}", parts_of(row.where)
        if row.why_not:
            continue
        for test in row.tests:
            every = EVERY_TEST.match(test)
            if every:
                if int(every[1]) not in parts:
                    found.append(f"{label}: Part {every[1]} is not where this sentence lives")
            elif test not in parts_of_test:
                found.append(f"{label}: no hidden test named {test}")
            elif not parts_of_test[test] & parts:
                found.append(f"{label}: {test} is in Part(s) {sorted(parts_of_test[test])}, not where the sentence "
                             f"lives")
        if not row.tests:
            found.append(f"{label}: no test enforces it (or say `{NOT_GRADED}why`)")
        if not row.bugs:
            found.append(f"{label}: no bug of the zoo breaks it (add one to autograder/zoo/bugs.py)")
        for bug in row.bugs:
            if bug not in bugs:
                found.append(f"{label}: no bug named {bug} in the zoo")
            elif bugs[bug] not in parts:
                found.append(f"{label}: the bug {bug} lives in Part {bugs[bug]}, not where the sentence lives")
    return found


def breaks(row: SentenceRow, results: dict) -> bool:
    """Whether a graded submission (its results.json) fails one of the row's tests, in the sentence's part."""
    failed = {(entry_part(test), entry_test(test).split("[")[0])
              for test in results["tests"] if test.get("status") == "failed" and entry_test(test)}
    every = {int(test.split()[-1]) for test in row.tests if EVERY_TEST.match(test)}
    return any((part, test) in failed for part in parts_of(row.where) for test in row.tests) \
        or any(part in every for part, _test in failed)


def render(rows: list[SentenceRow]) -> str:
    lines = [HEADER, "|---|---|---|---|"]
    for row in rows:
        enforced = NOT_GRADED + row.why_not if row.why_not else ", ".join(
            test if EVERY_TEST.match(test) else f"`{test}`" for test in row.tests)
        lines.append(f"| `{row.where}` | {row.sentence} | {enforced} | {', '.join(f'`{b}`' for b in row.bugs)} |")
    return "\n".join(lines)


def today(rows: list[SentenceRow], handout: list[tuple[str, str]]) -> list[SentenceRow]:
    """The table for today's handout: a kept sentence keeps its row; a reworded one takes the cells of the row, gone
    from the handout, of the most alike sentence of its docstring (more than half alike); a new one, empty cells."""
    kept = {(row.where, row.sentence): row for row in rows}
    gone = [row for row in rows if (row.where, row.sentence) not in handout]
    fresh = []
    for where, sentence in handout:
        if (where, sentence) in kept:
            fresh.append(kept[(where, sentence)])
            continue
        alike = max(((difflib.SequenceMatcher(None, row.sentence, sentence).ratio(), index)
                     for index, row in enumerate(gone) if row.where == where), default=(0.0, -1))
        old = gone.pop(alike[1]) if alike[0] > 0.5 else SentenceRow(where, sentence, (), "", ())
        fresh.append(dataclasses.replace(old, sentence=sentence))
    return fresh


def main() -> int:
    """Print the table for today's handout (today()), for pasting after a docstring changed."""
    print(render(today(table_rows(), sentences())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
