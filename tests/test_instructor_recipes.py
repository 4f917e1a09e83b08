"""docs/instructors.md, performed: each recipe on a copy of the repository, then `python -m autograder selfcheck
--quick` in that copy (the mistakes the self-check names: tests/test_instructor_mistakes.py).

Recipes that can share a copy do (rewording a docstring, re-weighting two parts, a hidden test for Part 3, Part
1's results shown at once, Gradescope's per-call timeout in both its forms, renaming a graded function): each is
applied and checked by its own test, and the self-check runs once on the copy holding them all, as do the copy's own
tests of the contract map. Dropping Part 6 gets a copy of its own.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass

import pytest

from assignment.spec import SPEC
from autograder import rename
from autograder.otter import harness
from autograder.samples import write_submission
from grader.paths import REPO
from tests.patience import SAFETY_NET_S
from tests.repository_copy import append, command, edit, part_table, python, repository_copy, results_of, selfcheck

SLOW_FIXTURES = {"recipes"}   # tests.conftest marks the tests that use it slow


# --------------------------------------------------------------------------- five recipes, one copy

SENTENCE = "        The result may be a view of x (no copy is needed).\n"
ANCHOR = "        h*D ... (h+1)*D - 1 of every token: out[b, h, l, d] == x[b, l, h*D + d].\n"

NEW_TEST = '''

def test_split_heads_of_a_single_token(student):
    x = randn(2, 1, 12, seed=240)
    check_split(student, x, 4)
'''


CONTRACT = "grading_tests/CONTRACT.md"
# The row of the sentence the new test enforces (its tests, then its bugs), and the end of the row of the sentence
# the reworded docstring's new one follows.
SENTENCE_TESTS = ("`test_split_heads_values`, `test_head_h_holds_features_h_times_d_onwards` | "
                  "`split-without-transpose`")
SENTENCE_ROW_END = "`split-without-transpose`, `split-interleaved` |"
NEW_SENTENCE_ROW = ("\n| `heads.split_heads` | The result may be a view of x (no copy is needed). "
                    "| not graded: a freedom |  |")


def reword_a_docstring(copy: pathlib.Path) -> None:
    edit(copy, "assignment/reference/heads.py", ANCHOR, ANCHOR + SENTENCE)


def add_a_hidden_test(copy: pathlib.Path) -> None:
    append(copy, "grading_tests/test_part3_heads.py", NEW_TEST)


def map_the_new_test_and_sentence(copy: pathlib.Path) -> subprocess.CompletedProcess:
    """The two recipes' steps in the contract map, as docs/instructors.md says: the new test's name in the row of the
    sentence it enforces (its one link), a row for the new sentence, then the per-test view derived again."""
    edit(copy, CONTRACT, SENTENCE_TESTS, SENTENCE_TESTS.replace(" | ", ", `test_split_heads_of_a_single_token` | "))
    edit(copy, CONTRACT, SENTENCE_ROW_END, SENTENCE_ROW_END + NEW_SENTENCE_ROW)
    return python(copy, "-m", "tests.contract_table", "--write")


def contract_tests(copy: pathlib.Path) -> subprocess.CompletedProcess:
    """The copy's own tests of the contract map (the quick ones: the zoo is graded by the project's run)."""
    return python(copy, "-m", "pytest", "tests/test_contract.py", "-m", "not slow", "-q", "-p", "no:cacheprovider",
                  "-o", "addopts=")


# The function the rename recipe renames: read from the spec, so that the recipe still runs in a checkout an
# instructor has renamed it in; the new name is one nobody else uses.
OLD_NAME, NEW_NAME = SPEC.part(2).names[0], "recipe_renamed_mask"


@dataclass(frozen=True)
class Recipes:
    """The copy holding every recipe that can share one, and the commands run in it."""
    copy: pathlib.Path
    generated: subprocess.CompletedProcess   # `generate`, once the spec and the reference were edited
    checked: subprocess.CompletedProcess     # the quick self-check, once every recipe was applied
    refused: subprocess.CompletedProcess     # the build, after a docstring was reworded and before `generate`
    mapped: subprocess.CompletedProcess      # the contract map's per-test view derived again (contract_table --write)
    renamed: subprocess.CompletedProcess     # `rename`


@pytest.fixture(scope="module")
def recipes(tmp_path_factory) -> Recipes:
    """Every recipe that can share a copy, applied to one copy as docs/instructors.md says."""
    copy = repository_copy(tmp_path_factory.mktemp("recipes") / "repo")
    spec = "assignment/assignment.toml"
    # Reword a docstring: a build before `generate` is refused.
    reword_a_docstring(copy)
    refused = command(copy, "build", "--out", str(copy.parent / "too-soon"), timeout=SAFETY_NET_S)
    # Change two parts' points.
    edit(copy, spec, part_table(copy, 1), part_table(copy, 1).replace("points = 10", "points = 15"))
    edit(copy, spec, part_table(copy, 2), part_table(copy, 2).replace("points = 30", "points = 25"))
    # Add a hidden test to Part 3; map it, and the reworded docstring's new sentence, in the contract map.
    add_a_hidden_test(copy)
    mapped = map_the_new_test_and_sentence(copy)
    assert mapped.returncode == 0, mapped.stdout + mapped.stderr
    # Show Part 1's tests at once.
    edit(copy, spec, part_table(copy, 1), part_table(copy, 1) + 'visibility = "visible"\n')
    # Set Gradescope's per-call timeout.
    edit(copy, spec, "\n[settings]\n", "\n[settings]\ncall_timeout = 30.0\n")
    generated = command(copy, "generate")
    # Rename a graded function (it runs generate itself).
    renamed = command(copy, "rename", OLD_NAME, NEW_NAME)
    checked = selfcheck(copy)
    return Recipes(copy, generated, checked, refused, mapped, renamed)


def test_recipes_leave_a_copy_whose_selfcheck_passes(recipes):
    generated, checked = recipes.generated, recipes.checked
    assert generated.returncode == 0 and "rewrote" in generated.stdout, generated.stdout + generated.stderr
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 failed" in checked.stdout


def test_recipes_leave_the_projects_contract_map_green(recipes):
    """Re-weighting and renaming touch no row of grading_tests/CONTRACT.md by hand (the rename rewrites the names in
    it); a new test and a new sentence need the rows the recipes add, one edit linking the new test (the per-test
    view is derived from it): the copy's own tests of the map pass."""
    assert "rewrote the per-test view" in recipes.mapped.stdout, recipes.mapped.stdout
    assert "| `test_part3_heads.py::test_split_heads_of_a_single_token` | `heads.split_heads` | " \
           in (recipes.copy / CONTRACT).read_text()
    proc = contract_tests(recipes.copy)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_recipe_change_two_parts_points(recipes):
    copy = recipes.copy
    dist = copy / "out" / "selfcheck" / "dist"
    with zipfile.ZipFile(dist / "attention-handout.zip") as zf:
        readme = zf.read("README.md").decode()
    assert "| 1 Scaling | 15 |" in readme and "| 2 Masking and attention weights | 25 |" in readme
    assert "| 1 Scaling | 15 |" in (dist / "attention.ipynb").read_text()
    row = results_of(copy, "reference")["extra_data"]["gradebook_row"]
    assert (row["score"], row["part1"], row["part2"]) == (100.0, 15.0, 25.0)


def test_recipe_add_a_hidden_test_to_part_3(recipes):
    copy = recipes.copy
    statuses = {test["name"]: test.get("status") for test in results_of(copy, "reference")["tests"]}
    assert statuses["Part 3 (Splitting and merging heads): test_split_heads_of_a_single_token"] == "passed"
    assert any("test_split_heads_of_a_single_token" in test["name"] and test["status"] == "failed"
               for test in results_of(copy, "stubs")["tests"])


def test_recipe_show_part_1_at_once_and_the_rest_after_publication(recipes, tmp_path):
    copy = recipes.copy
    autograder = copy / "out" / "selfcheck" / "dist" / "autograder.zip"
    submission = write_submission(tmp_path / "reference")
    run = harness.run(autograder, shutil.make_archive(str(tmp_path / "reference"), "zip", submission),
                      tmp_path / "run")
    shown = {test["name"].split(")")[0] + ")": test["visibility"] for test in run.results["tests"]
             if test["name"].startswith("Part ")}
    assert shown.pop("Part 1 (Scaling)") == "visible"
    assert set(shown.values()) == {"after_published"}
    assert run.results["tests"][0]["visibility"] == "after_published"   # the summary tells every part's score


def test_recipe_set_gradescopes_per_call_timeout(recipes):
    copy = recipes.copy
    source = copy / "out" / "selfcheck" / "autograder-source"   # autograder.zip, unpacked by the self-check
    probe = "from grader.contain.limits import Limits; print(Limits().call_timeout)"
    limit = subprocess.run([sys.executable, "-c", probe], cwd=source, capture_output=True, text=True,
                           timeout=SAFETY_NET_S,
                           env={**os.environ, "PYTHONPATH": str(source)})
    assert limit.stdout.strip() == "30.0", limit.stderr


SPINS = '''
    import time
    spin_until = time.process_time() + 1.5
    while q.size(-1) == 31 and time.process_time() < spin_until:   # a few calls of the suite only
        pass
'''


def test_the_per_call_timeout_set_for_gradescope_is_the_one_that_grades(recipes, tmp_path):
    """Calls that compute 1.5 s: graded normally under the recipe's 30 s (the self-check's build), timeouts under the
    same setting in Otter's form (--otter-config {"timeout": 1}), built from the same copy."""
    copy = recipes.copy
    config = tmp_path / "otter_config.json"
    config.write_text(json.dumps({"timeout": 1}))
    slow = write_submission(tmp_path / "slow", overrides={"scaling.py": (REPO / "assignment/reference/scaling.py")
                                                          .read_text().replace("    # BEGIN SOLUTION\n",
                                                                               "    # BEGIN SOLUTION\n" + SPINS, 1)})
    upload = shutil.make_archive(str(tmp_path / "slow"), "zip", slow)
    built = command(copy, "build", "--out", str(tmp_path / "one-second"), "--otter-config", str(config))
    assert built.returncode == 0, built.stderr
    statuses = {}
    builds = {"thirty-seconds": copy / "out" / "selfcheck" / "dist", "one-second": tmp_path / "one-second"}
    for name, dist in builds.items():
        run = harness.run(dist / "autograder.zip", upload, tmp_path / f"run-{name}")
        statuses[name] = run.results["extra_data"]["gradebook_row"]["status"]
    assert statuses == {"thirty-seconds": "graded", "one-second": "timeout"}


# --------------------------------------------------------------------------- drop Part 6

REWORDED = {   # file -> (old, new): the places the self-check names once Part 6 is gone
    "assignment/reference/multihead.py": [
        ('"""Part 5: multi-head self- and cross-attention. Part 6: the same through PyTorch\'s fused SDPA.',
         '"""Part 5: multi-head self- and cross-attention (and, given, the same through PyTorch\'s fused SDPA).'),
        ("                torch.nn.functional.scaled_dot_product_attention (Part 6).",
         "                torch.nn.functional.scaled_dot_product_attention (given)."),
        ('        """Part 6: the attention step through torch.nn.functional.scaled_dot_product_attention.',
         '        """The attention step through torch.nn.functional.scaled_dot_product_attention (given).'),
        ("        It must work whichever SDPA backend torch picks: the grader also runs it\n"
         "        with SDPA restricted to its math backend, which refuses an attn_mask\n"
         "        together with is_causal=True.", "        It works whichever SDPA backend torch picks."),
        ("        Return what F.scaled_dot_product_attention returns when given these q,\n"
         "        k and v with this mask, causality and dropout_p (a bool or an additive\n"
         "        float mask, is_causal or the causal mask folded in, one call or one per\n"
         "        head): the grader checks each call's arguments, and a call on other\n"
         "        inputs does not count.\n", "        It returns what F.scaled_dot_product_attention returns.\n"),
    ],
    "handout/README.md": [
        ("- Part 6 compares both of your paths with plain PyTorch math and says which one disagrees:\n"
         "  the MANUAL path (Part 5) or the FUSED one (Part 6).\n", ""),
        ("Once Parts 5 and 6 pass, it times", "Once Part 5 passes, it times"),
    ],
    "handout/bench.py": [
        ("run it once Parts 5 and 6 pass their checks.", "run it once Part 5 passes its checks."),
        ("(`python -m student.check --part 6` \"\n                     \"says which)",
         "(`python -m student.check --part 5` \"\n                     \"checks the manual one)"),
    ],
}
NOTEBOOK_SENTENCE = "Your masks will be handed straight to it in Part 6."


def drop_part_6(copy: pathlib.Path) -> None:
    spec = "assignment/assignment.toml"
    edit(copy, spec, part_table(copy, 6) + "\n", "")
    edit(copy, spec, part_table(copy, 5), part_table(copy, 5).replace("points = 25", "points = 40"))


@pytest.mark.slow
def test_recipe_drop_part_6(tmp_path):
    copy = repository_copy(tmp_path / "repo")
    drop_part_6(copy)
    assert command(copy, "generate").returncode == 0
    first = selfcheck(copy)
    assert first.returncode == 1
    named = [line for line in first.stdout.splitlines() if "names Part 6" in line]
    expected_files = {*REWORDED, "assignment/notebook/attention.ipynb"}
    assert {line.split(":")[0].split()[0] for line in named} == expected_files, first.stdout
    for name, changes in REWORDED.items():
        for old, new in changes:
            edit(copy, name, old, new)
    notebook = (copy / "assignment/notebook/attention.ipynb").read_text()
    assert notebook.count(NOTEBOOK_SENTENCE) == 1
    (copy / "assignment/notebook/attention.ipynb").write_text(notebook.replace(NOTEBOOK_SENTENCE + " ", ""))
    assert command(copy, "generate").returncode == 0
    second = selfcheck(copy)
    assert second.returncode == 0, second.stdout + second.stderr

    dist = copy / "out" / "selfcheck" / "dist"
    with zipfile.ZipFile(dist / "attention-handout.zip") as zf:
        names, multihead = zf.namelist(), zf.read("student/multihead.py").decode()
    assert "student/tests/test_part6_fused.py" not in names
    assert "NotImplementedError(\"Part 6" not in multihead and "F.scaled_dot_product_attention(q, k, v" in multihead
    assert "check(6)" not in (dist / "attention.ipynb").read_text()
    row = results_of(copy, "reference")["extra_data"]["gradebook_row"]
    assert row["score"] == 100.0 and "part6" not in row and row["part5"] == 40.0
    grades = (copy / "out" / "selfcheck" / "grades" / "grades.csv").read_text().splitlines()[0]
    assert "part5" in grades and "part6" not in grades
    assert not any(line.startswith("bug-fused") for line in second.stdout.splitlines())


def test_recipe_reword_a_docstring_and_rebuild_the_handout(recipes):
    copy, refused = recipes.copy, recipes.refused
    assert refused.returncode == 1
    assert "student/heads.py" in refused.stderr and "python -m autograder generate" in refused.stderr
    with zipfile.ZipFile(copy / "out" / "selfcheck" / "dist" / "attention-handout.zip") as zf:
        assert SENTENCE.strip() in zf.read("student/heads.py").decode()


# --------------------------------------------------------------------------- rename a graded function

def test_recipe_rename_a_graded_function(recipes):
    """After `rename`, no file of the copy names the old function (its derived names included: the hidden tests'
    names, which students read), the handout defines the new one, and the graded results name it."""
    copy, renamed = recipes.copy, recipes.renamed
    assert renamed.returncode == 0, renamed.stdout + renamed.stderr
    assert f"occurrences of {OLD_NAME}" in renamed.stdout
    still = [str(path.relative_to(copy)) for path, text in rename.text_files(copy).items()
             if rename.occurrences(OLD_NAME).search(text)]
    assert still == [], still
    with zipfile.ZipFile(copy / "out" / "selfcheck" / "dist" / "attention-handout.zip") as zf:
        assert f"def {NEW_NAME}(" in zf.read("student/masking.py").decode()
        assert f'"{NEW_NAME}"' in zf.read("student/__init__.py").decode()
    names = [t["name"] for t in results_of(copy, "reference")["tests"]]
    assert any(NEW_NAME in name for name in names) and not any(OLD_NAME in name for name in names)


@pytest.mark.parametrize("old, new, why", [
    ("padding_mask", "key_mask", "parameter 'padding_mask'"),          # MultiHeadAttention.forward's too
    ("scaled_dot_product_attention", "attend", "PyTorch's torch.nn.functional.scaled_dot_product_attention"),
    ("forward", "run", "not a graded function"),
    ("causal_mask", "apply_mask", "already part of the name"),         # the two would merge
    ("causal_mask", "class", "not a public Python name"),
])
def test_a_rename_that_would_break_something_is_refused_and_says_why(old, new, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        rename.rename(old, new, dry_run=True)


def test_a_rename_leaves_another_graded_name_that_contains_the_old_one():
    text = "expand_padding_mask(padding_mask); test_padding_mask_values"
    assert [text[start:end] for start, end in rename.spans("padding_mask", text)] == ["padding_mask"] * 2
    assert rename.spans("padding_mask", text)[0][0] == text.index("(") + 1
