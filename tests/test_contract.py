"""The traceability tables (grading_tests/CONTRACT.md): every hidden test names the handout sentence it
enforces, every named sentence is in the student docstrings, and the points are the suite's; the other way
round, every sentence of the handout has a row saying which tests enforce it, in its part, and which bugs of the
zoo break it, and each of those bugs, graded by the engine, fails one of those tests."""
import dataclasses

import pytest

from grader.scoring import tags
from tests import contract_sentences as cs
from tests import contract_table as ct


def test_every_hidden_test_enforces_a_sentence_of_the_handout():
    assert ct.problems(ct.table_rows(), ct.hidden_tests(), ct.docstrings()) == []


def test_the_check_catches_a_missing_row_a_sentence_not_in_the_handout_and_a_name_not_graded():
    rows, tests, texts = ct.table_rows(), ct.hidden_tests(), ct.docstrings()
    first, second, third = rows[:3]
    planted = [dataclasses.replace(second, sentence="scores are clipped to [-5, 5] before the softmax"),
               dataclasses.replace(third, where="scaling.scaled_scores_v2"), *rows[3:]]
    found = ct.problems(planted, tests, texts)
    assert any(first.test in p and "names no sentence" in p and "python -m tests.contract_table" in p
               for p in found), found
    assert any(second.test in p and "does not say" in p for p in found), found
    assert any(third.test in p and "not a graded name" in p for p in found), found
    ghost = dataclasses.replace(first, test="test_part1_scaling.py::test_that_does_not_exist")
    assert any("no such hidden test" in p for p in ct.problems([*rows, ghost], tests, texts))


def test_the_tables_parse_every_row_of_the_file():
    lines = [line for line in ct.CONTRACT.read_text().splitlines() if line.startswith("| `")]
    assert len(lines) == len(ct.table_rows()) + len(cs.table_rows())
    assert len(ct.table_rows()) > 80 and len(cs.table_rows()) == len(cs.sentences()) > 80


def test_every_sentence_of_the_handout_has_a_test_in_its_part_and_a_bug_that_breaks_it():
    assert cs.problems(cs.table_rows(), cs.sentences(), ct.hidden_tests(), ct.table_rows()) == []


def test_the_sentence_check_catches_a_missing_row_a_test_of_another_part_and_a_sentence_no_bug_breaks():
    rows, handout, tests, forward = cs.table_rows(), cs.sentences(), ct.hidden_tests(), ct.table_rows()
    graded = [row for row in rows if not row.why_not and not any(cs.EVERY_TEST.match(t) for t in row.tests)]
    first, second, third = graded[0], graded[1], graded[-1]
    planted = [row for row in rows if row not in (first, second, third)]
    planted += [dataclasses.replace(second, tests=(*second.tests, "test_fused_agrees_with_float64_math")),
                dataclasses.replace(third, bugs=())]
    found = cs.problems(planted, handout, tests, forward)
    assert any(first.sentence in p and "has no row" in p for p in found), found
    assert any(second.sentence[:60] in p and "not where the sentence lives" in p for p in found), found
    assert any(third.sentence[:60] in p and "no bug of the zoo breaks it" in p for p in found), found
    explained = dataclasses.replace(third, tests=(), why_not="")
    assert any("no test enforces it" in p for p in cs.problems([*planted[:-1], explained], handout, tests, forward))


@pytest.mark.slow
def test_every_bug_listed_against_a_sentence_fails_one_of_its_tests(graded_zoo):
    for row in (row for row in cs.table_rows() if not row.why_not):
        for bug in row.bugs:
            assert cs.breaks(row, graded_zoo.results[f"bug-{bug}"]), (bug, row.sentence)


def test_a_bug_breaks_a_sentence_only_by_failing_one_of_its_tests_in_its_part():
    row = cs.SentenceRow("heads.split_heads", "x: (B, L, E).", ("test_keeps_the_dtype",), "", ("some-bug",))
    def results(*failed):   # (part, test id) of each failed test, tagged as the engine tags them
        return {"tests": [{"name": f"Part {part}: {test}", "tags": tags(part, test), "status": "failed"}
                          for part, test in failed]
                + [{"name": "Part 3: test_split_heads_values", "tags": tags(3, "test_split_heads_values"),
                    "status": "passed"}]}
    assert cs.breaks(row, results((3, "test_keeps_the_dtype[torch.float16]")))
    assert not cs.breaks(row, results((5, "test_keeps_the_dtype")))   # the same name elsewhere
    assert not cs.breaks(row, results())
    every = dataclasses.replace(row, tests=("every test of Part 3",))
    assert cs.breaks(every, results((3, "test_merge_heads_values")))
