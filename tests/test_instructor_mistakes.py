"""Each kind of instructor mistake docs/instructors.md promises the self-check names, made in a copy of the
repository: the self-check stops before building or grading and names the file to fix; a broken reference is
graded and its failing tests named, with the files to look at. (Apart from tests/test_instructor_recipes.py so
that the two pytest-xdist workers share them.)"""
from __future__ import annotations

import pytest

from tests.repository_copy import append, command, edit, part_table, repository_copy, selfcheck

MISTAKES = {
    "points that do not add up": (
        lambda copy: edit(copy, "assignment/assignment.toml", part_table(copy, 4),
                          part_table(copy, 4).replace("points = 10", "points = 12")),
        ["assignment/assignment.toml", "add up to 102"]),
    "a test for a name the spec does not declare": (
        lambda copy: append(copy, "grading_tests/test_part3_heads.py",
                            "\n\ndef test_a_typo(student):\n    call(student.splt_heads, randn(1, 2, 4, seed=1), 2)\n"),
        ["grading_tests/test_part3_heads.py::test_a_typo", "student.splt_heads", "does not declare"]),
    "a part with no test": (
        lambda copy: (copy / "grading_tests/test_part4_padding.py").unlink(),
        ["Part 4 (Padding-mask expansion) has no hidden test", "grading_tests/test_part4_*.py"]),
    "a part whose reference calls a part it does not use": (
        lambda copy: edit(copy, "assignment/assignment.toml", "uses = [2, 3, 4, 5]", "uses = [3, 4, 5]"),
        ["calls causal_mask (Part 2): add 2 to Part 6's `uses`"]),
    "a bug of the zoo whose edit the reference no longer has": (
        lambda copy: edit(copy, "assignment/reference/scaling.py", "        scale = q.size(-1) ** -0.5",
                          "        scale = 1 / q.size(-1) ** 0.5"),
        ["autograder/zoo/bugs.py", "no-scale: its edit no longer applies to the reference"]),
    "a derived file not regenerated": (
        lambda copy: edit(copy, "assignment/assignment.toml", 'title = "Scaling"', 'title = "Scores"'),
        ["student/parts.py", "python -m autograder generate"]),
}


@pytest.mark.slow   # runs the instructors' command in a child process
@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_selfcheck_names_the_mistake_and_the_file_to_fix_before_grading(mistake, tmp_path):
    make, expected = MISTAKES[mistake]
    copy = repository_copy(tmp_path / "repo")
    make(copy)
    checked = selfcheck(copy)
    assert checked.returncode == 1 and "Traceback" not in checked.stdout + checked.stderr
    assert all(text in checked.stdout + checked.stderr for text in expected), checked.stdout + checked.stderr
    assert not (copy / "out" / "selfcheck" / "grades").exists()   # it stopped before building or grading


def test_selfcheck_names_the_tests_a_broken_reference_fails_and_where_to_look(tmp_path, dist):
    copy = repository_copy(tmp_path / "repo")
    split = "    return x.reshape(B, L, num_heads, E // num_heads).transpose(1, 2)\n"
    edit(copy, "assignment/reference/heads.py", split, "    x = x.flip(-1)\n" + split)   # the zoo's edits still apply
    checked = command(copy, "selfcheck", "--quick", "--out", str(copy / "out" / "selfcheck"), "--dist", str(dist))
    assert checked.returncode == 1
    reference = next(line for line in checked.stdout.splitlines() if line.startswith("reference "))
    assert "FAIL" in reference and "failed (" in reference
    assert "grading_tests/test_part3_*.py" in reference and "assignment/reference/heads.py" in reference
