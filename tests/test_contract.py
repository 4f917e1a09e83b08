"""The contract map (grading_tests/CONTRACT.md): every sentence of the handout has a row saying which tests enforce
it, in its part, and which bugs of the zoo break it, and each of those bugs, graded by the engine, fails one of those
tests; every hidden test is named in the row of a sentence it enforces; the per-test view is what that table
derives (the links are written once)."""
import dataclasses

import pytest

from grader.scoring import tags
from tests import contract_sentences as cs
from tests import contract_table as ct


@pytest.fixture(scope="module")
def hidden():
    """The hidden suite's tests, collected once for the module."""
    return cs.hidden_tests()


def test_every_sentence_has_a_test_in_its_part_and_a_bug_and_every_hidden_test_a_sentence(hidden):
    assert cs.problems(cs.table_rows(), cs.sentences(), hidden) == []


def test_the_per_test_view_is_what_the_sentence_table_derives(hidden):
    text = cs.CONTRACT.read_text()
    assert ct.with_view(text, cs.table_rows(text), hidden) == text, f"run `{cs.WRITE_VIEW}`"


def test_the_table_parses_every_row_of_the_file_and_the_view_lists_every_hidden_test(hidden):
    text = cs.CONTRACT.read_text()
    view = text[text.index(ct.BEGIN):text.index(ct.END)]
    lines = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(lines) == len(cs.table_rows()) + view.count("\n| `")
    assert len(cs.table_rows()) == len(cs.sentences()) > 80
    assert all(f"| `{test.test}` |" in view for test in hidden) and len(hidden) > 80


def test_the_check_catches_a_missing_row_a_test_of_another_part_a_sentence_no_bug_breaks_and_an_unnamed_test(hidden):
    rows, handout = cs.table_rows(), cs.sentences()
    graded = [row for row in rows if not row.why_not and not any(cs.EVERY_TEST.match(t) for t in row.tests)]
    first, second, third = graded[0], graded[1], graded[-1]
    planted = [row for row in rows if row not in (first, second, third)]
    planted += [dataclasses.replace(second, tests=(*second.tests, "test_fused_agrees_with_float64_math")),
                dataclasses.replace(third, bugs=())]
    found = cs.problems(planted, handout, hidden)
    assert any(first.sentence in p and "has no row" in p for p in found), found
    assert any(second.sentence[:60] in p and "not where the sentence lives" in p for p in found), found
    assert any(third.sentence[:60] in p and "no bug of the zoo breaks it" in p for p in found), found
    explained = dataclasses.replace(third, tests=(), why_not="")
    assert any("no test enforces it" in p for p in cs.problems([*planted[:-1], explained], handout, hidden))
    # A hidden test named in no row: its sentence's row is where to name it, and the view is then rewritten.
    lone = next(test for test in hidden if sum(cs.enforces(row, test) for row in rows) == 1)
    unnamed = [dataclasses.replace(row, tests=tuple(t for t in row.tests if t != lone.name))
               if cs.enforces(row, lone) else row for row in rows]
    assert [p for p in cs.problems(unnamed, handout, hidden) if lone.test in p] == [
        f"{lone.test}: no sentence names it: add `{lone.name}` to the 'enforced by' cell of each sentence of "
        f"Part {lone.part} it enforces (grading_tests/{cs.CONTRACT.name}), then `{cs.WRITE_VIEW}`"]
    text = cs.CONTRACT.read_text()
    assert ct.with_view(text, unnamed, hidden) != text   # the view, left as it was, is found stale


def test_a_reworded_sentence_keeps_its_row_and_a_new_one_gets_empty_cells():
    rows, handout = cs.table_rows(), cs.sentences()
    graded = next(row for row in rows if row.where == "heads.split_heads" and row.bugs and len(row.sentence) > 60)
    reworded = graded.sentence.replace(" of every token", " of each token")
    assert reworded != graded.sentence
    new = ("heads.split_heads", "A sentence no docstring holds (yet).")
    index = handout.index((graded.where, graded.sentence))
    today = cs.today(rows, [*handout[:index], (graded.where, reworded), new, *handout[index + 1:]])
    assert today[index] == dataclasses.replace(graded, sentence=reworded)
    assert today[index + 1] == cs.SentenceRow(*new, (), "", ())
    assert cs.today(rows, handout) == rows


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
