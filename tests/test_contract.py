"""The traceability table (grading_tests/CONTRACT.md): every hidden test names the handout sentence it
enforces, every named sentence is in the student docstrings, and the points are the suite's."""
import dataclasses

from tests import contract_table as ct


def test_every_hidden_test_enforces_a_sentence_of_the_handout():
    assert ct.problems(ct.table_rows(), ct.hidden_tests(), ct.docstrings()) == []


def test_the_table_covers_all_100_points():
    assert abs(sum(row.points for row in ct.table_rows()) - 100) < 0.5


def test_the_check_catches_a_missing_row_a_sentence_not_in_the_handout_and_wrong_points():
    rows, tests, texts = ct.table_rows(), ct.hidden_tests(), ct.docstrings()
    first, second, third = rows[:3]
    planted = [dataclasses.replace(second, sentence="scores are clipped to [-5, 5] before the softmax"),
               dataclasses.replace(third, points=third.points + 1), *rows[3:]]
    found = ct.problems(planted, tests, texts)
    assert any(first.test in p and "names no sentence" in p for p in found), found
    assert any(second.test in p and "does not say" in p for p in found), found
    assert any(third.test in p and "points" in p for p in found), found
    ghost = dataclasses.replace(first, test="test_part1_scaling.py::test_that_does_not_exist")
    assert any("no such hidden test" in p for p in ct.problems([*rows, ghost], tests, texts))


def test_the_table_parses_every_row_of_the_file():
    lines = [line for line in ct.CONTRACT.read_text().splitlines() if line.startswith("| `")]
    assert len(lines) == len(ct.table_rows()) > 80
