"""The per-test view of the contract map (grading_tests/CONTRACT.md): each hidden test -> the sentences it enforces.

Derived, never written by hand: the links live once, in the map's sentence table (tests/contract_sentences.py),
and this view is that table read the other way round, for each hidden test in the suite's order, between the
markers below. tests/test_contract.py fails when the view is not what the table derives, and

    python -m tests.contract_table --write      rewrites it (after a test's name was added to a sentence's row)
    python -m tests.contract_table              prints it
"""
from __future__ import annotations

import sys

from tests import contract_sentences as cs

BEGIN = f"<!-- BEGIN PER-TEST VIEW: derived from the sentence table below by `{cs.WRITE_VIEW}` -->"
END = "<!-- END PER-TEST VIEW -->"
HEADER = "| hidden test | handout | the sentences it enforces |"


def view(rows: list[cs.SentenceRow], tests: list[cs.HiddenTest]) -> str:
    """One line per hidden test and graded name whose sentences it enforces (a test no row names has none)."""
    lines = [HEADER, "|---|---|---|"]
    for test in tests:
        named = [row for row in rows if cs.enforces(row, test)]
        for where in dict.fromkeys(row.where for row in named):
            sentences = " ".join(row.sentence for row in named if row.where == where)
            lines.append(f"| `{test.test}` | `{where}` | {sentences} |")
    return "\n".join(lines)


def with_view(text: str, rows: list[cs.SentenceRow], tests: list[cs.HiddenTest]) -> str:
    """The map's text with the region between the markers replaced by the view its sentence table derives."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"grading_tests/{cs.CONTRACT.name} has no {BEGIN!r} ... {END!r} region for the per-test view")
    return text[:start] + BEGIN + "\n" + view(rows, tests) + "\n" + text[end:]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv not in ([], ["--write"]):
        print(f"usage: python -m tests.contract_table [--write]   (--write: into grading_tests/{cs.CONTRACT.name})",
              file=sys.stderr)
        return 2
    text = cs.CONTRACT.read_text()
    derived = with_view(text, cs.table_rows(text), cs.hidden_tests())
    if not argv:
        print(derived[derived.index(BEGIN) + len(BEGIN):derived.index(END)].strip())
    elif derived != text:
        cs.CONTRACT.write_text(derived)
        print(f"rewrote the per-test view of grading_tests/{cs.CONTRACT.name}")
    else:
        print(f"the per-test view of grading_tests/{cs.CONTRACT.name} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
