"""The graded API is named in several places that cannot import each other (the student's package,
the sandbox-side executor, the instructor's tools); they must agree name for name."""
import pathlib

import student
from autograder.adversarial import expectations
from autograder.stubs import GRADED_MODULES
from grading_tests import gateway
from grading_tests.scoring import PART_POINTS, PART_TITLES
from student.parts import PARTS


def test_the_student_package_exposes_exactly_the_names_the_grader_calls():
    assert set(student._HOMES) == {*gateway.FUNCTIONS, gateway.MODULE_CLASS}
    assert student.__all__ == list(student._HOMES)


def test_the_graded_modules_are_the_homes_of_the_graded_names():
    assert set(GRADED_MODULES) == {f"{module}.py" for module in student._HOMES.values()}
    root = pathlib.Path(student.__file__).parent
    for name, module in student._HOMES.items():
        assert f"def {name}(" in (root / f"{module}.py").read_text() or \
            f"class {name}(" in (root / f"{module}.py").read_text(), (name, module)


def test_every_graded_name_belongs_to_exactly_one_part():
    owners = {}
    for number, (_title, qualnames) in PARTS.items():
        for qualname in qualnames:
            owners.setdefault(qualname.split(".")[0], set()).add(number)
    assert set(owners) == set(student._HOMES)
    module_parts = owners.pop(gateway.MODULE_CLASS)
    assert module_parts == {5, 6}   # MultiHeadAttention: the manual path (5) and the fused path (6)
    assert all(len(parts) == 1 for parts in owners.values()), owners


def test_parts_sum_to_100_and_every_copy_of_the_parts_agrees():
    assert sum(PART_POINTS.values()) == 100
    assert {number: title for number, (title, _names) in PARTS.items()} == PART_TITLES
    assert tuple(PARTS) == expectations.PARTS
