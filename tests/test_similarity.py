"""Who may have copied: disguised copies are found, independent solutions and the handout's code are not."""
from __future__ import annotations

import ast
import pathlib
import re

import pytest

from autograder.cohort import hands
from autograder.cohort.disguise import disguise
from autograder.engine import similarity, submissions
from autograder.samples import reference_source, write_submission
from autograder.stubs import GRADED_MODULES


def codes_of(folder: pathlib.Path) -> dict[str, similarity.Code]:
    return {s.name: similarity.read(s) for s in submissions.discover([folder])}


def flagged(codes, **settings) -> set[frozenset[str]]:
    return {frozenset((p.first.name, p.second.name)) for p in similarity.compare(list(codes), **settings)}


@pytest.fixture(scope="module")
def hand_class(tmp_path_factory):
    """The reference, each independent hand, and a disguised copy of each."""
    folder = tmp_path_factory.mktemp("class")
    write_submission(folder / "reference")
    for name, modules in hands().items():
        write_submission(folder / name, overrides=modules)
        write_submission(folder / f"{name}-copy", overrides={m: disguise(t, 7) for m, t in modules.items()})
    return codes_of(folder)


def test_every_disguised_copy_is_flagged_with_its_original_and_nothing_else_is(hand_class):
    names = sorted(hands())
    assert len(names) >= 4, "the independent hands are missing"
    assert flagged(hand_class.values()) == {frozenset((name, f"{name}-copy")) for name in names}


def test_the_handouts_own_code_is_never_what_makes_two_submissions_alike(tmp_path):
    """Two students who each kept every stub's docstring and signature and wrote different (trivial) bodies."""
    for name, body in (("a", "return None"), ("b", "pass")):
        write_submission(tmp_path / name, solution=False)
        for module in GRADED_MODULES:
            path = tmp_path / name / "student" / module
            path.write_text(re.sub(r"raise NotImplementedError\(.*\)", body, path.read_text()))
    codes = codes_of(tmp_path).values()
    assert flagged(codes) == set()
    # the defence: without the handout as boilerplate, its docstrings and signatures make them "copies"
    assert flagged(codes, boilerplate="") == {frozenset(("a", "b"))}


def test_members_of_one_group_are_not_compared(tmp_path):
    write_submission(tmp_path / "first")
    write_submission(tmp_path / "second")
    first, second = codes_of(tmp_path).values()
    assert flagged([first, second]) == {frozenset(("first", "second"))}
    shared = frozenset({"0042"})
    assert flagged([similarity.Code(**{**vars(first), "people": shared | {"1"}}),
                    similarity.Code(**{**vars(second), "people": shared})]) == set()


def test_the_report_escapes_the_code_and_names_where_the_shared_spans_are(tmp_path):
    hostile = reference_source("masking.py").replace(
        '"""Part 2', '"""</pre><script>alert(1)</script>\nPart 2', 1)
    for name in ("first", "second<img src=x onerror=alert(1)>"):
        write_submission(tmp_path / name, overrides={"masking.py": hostile})
    pairs = similarity.compare(list(codes_of(tmp_path).values()))
    page = similarity.render_html(pairs, 2, similarity.settings_line())
    assert len(pairs) == 1 and "<script>" not in page and "<img" not in page and "&lt;script&gt;" in page
    assert "http" not in page, "the report must open offline"
    places = similarity.spans(pairs[0].first, pairs[0].slices[0])
    assert "masking.py:" in places and "multihead.py:" in places


def test_a_disguise_renames_locals_and_reorders_functions_but_keeps_the_interface():
    source = reference_source("masking.py")
    changed = disguise(source, seed=3)
    names = [node.name for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)]
    new_names = [node.name for node in ast.parse(changed).body if isinstance(node, ast.FunctionDef)]
    assert sorted(names) == sorted(new_names) and names != new_names
    def local_names(text):
        return {node.id for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Name)}
    assert "weights" in local_names(source) and "weights" not in local_names(changed)   # a local, renamed
    signatures = {n.name: ast.dump(n.args) for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}
    assert signatures == {n.name: ast.dump(n.args) for n in ast.parse(changed).body if isinstance(n, ast.FunctionDef)}
    assert {m: disguise(reference_source(m), 1) for m in GRADED_MODULES}   # every graded module parses back
