"""The assignment declared once (assignment/assignment.toml, read by assignment/spec.py): what it refuses, and
that everything else takes the assignment from it rather than keeping a copy; dependencies run one way."""
from __future__ import annotations

import ast
import dataclasses
import pathlib
import re
import tomllib

import pytest

import student
from assignment.spec import SPEC, SPEC_FILE, SpecError, load
from autograder import derived
from autograder.stubs import GRADED_MODULES
from grader import row
from grader.paths import REPO
from grader.scoring import PART_POINTS, PART_TITLES, parts_using
from grader.wire import executor
from student.parts import PARTS
from tests.repository_copy import command, edit, repository_copy

PACKAGES = ("assignment", "autograder", "grading_tests", "student")


def declaration(edit) -> str:
    """The checked-in declaration with one textual edit (old, new) applied exactly once."""
    text = SPEC_FILE.read_text()
    old, new = edit
    assert text.count(old) == 1, old
    return text.replace(old, new)


BROKEN = {
    "points that do not add up": (('points = 15\n', 'points = 5\n'), r"add up to 90 .*not total = 100"),
    "a misspelt key": (('uses = [2, 3, 4]\n', 'usess = [2, 3, 4]\n'), r"unknown key `usess`.*did you mean `uses`"),
    "a misspelt setting": (("\n[settings]\n", "\n[settings]\nshow_hiden = true\n"),
                           r"unknown setting 'show_hiden'.*show_hidden"),
    "an ill-typed setting": (("\n[settings]\n", '\n[settings]\nbudget = "4 minutes"\n'),
                             r"budget must be a positive number.*budget = 240"),
    "a negative number": (("\n[settings]\n", "\n[settings]\nlate_grace_hours = -1\n"),
                          r"late_grace_hours must be a non-negative number"),
    "more than the whole score": (("\n[settings]\n", "\n[settings]\nlate_cap = 150\n"),
                                  r"late_cap must be a non-negative number of at most 100"),
    "a part of a submission": (("\n[settings]\n", "\n[settings]\nallowed_submissions = 2.5\n"),
                               r"allowed_submissions must be a whole number above 0.*allowed_submissions = 3"),
    "a choice not offered": (("\n[settings]\n", '\n[settings]\nforbidden_calls = "ignore"\n'),
                             r'forbidden_calls must be "cost" or "flag"'),
    "an unknown visibility": (('names = ["scaled_scores"]\n', 'names = ["scaled_scores"]\nvisibility = "soon"\n'),
                              r"visibility must be one of .*after_published"),
    "a part used but not declared": (("uses = [1]", "uses = [7]"), r"Part 2 uses Part 7, which is not declared"),
    "a cycle of uses": (("uses = []\n\n[[parts]]\nnumber = 2", "uses = [2]\n\n[[parts]]\nnumber = 2"),
                        r"Part 1 uses itself through other parts"),
    "a name in two parts": (('names = ["expand_padding_mask"]', 'names = ["split_heads"]'),
                            r"split_heads is in Part 3 and Part 4"),
    "a method of another class": (('"MultiHeadAttention._fused_attention"', '"Attention._fused_attention"'),
                                  r"methods written \"MultiHeadAttention.<method>\""),
    "a number where text belongs": (('title = "Scaling"', "title = 1"), r"`title` must be a str"),
    "not TOML": (("total = 100", "total = = 100"), r"not valid TOML"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_declaration_is_refused_with_the_file_and_what_to_write(case, tmp_path):
    edit, message = BROKEN[case]
    path = tmp_path / SPEC_FILE.name
    path.write_text(declaration(edit))
    with pytest.raises(SpecError, match=message) as raised:
        load(path)
    assert SPEC_FILE.name in str(raised.value)


def test_a_command_run_on_a_broken_declaration_says_what_is_wrong_without_a_traceback(tmp_path):
    """The declaration is read as assignment.spec is imported, so the command's own import is what fails."""
    copy = repository_copy(tmp_path)
    edit(copy, "assignment/assignment.toml", "total = 100", "total = = 100")
    ran = command(copy, "spec")
    assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stderr[-2000:]
    assert "spec: the assignment's declaration cannot be used" in ran.stderr and "not valid TOML" in ran.stderr


def test_the_checked_in_declaration_reads_back_from_what_autograder_zip_carries(tmp_path):
    shipped = tmp_path / "assignment.toml"
    shipped.write_text(SPEC.to_toml())
    assert dataclasses.replace(load(shipped), source=SPEC.source) == SPEC


def test_each_setting_is_declared_once_with_a_type_a_default_and_a_meaning():
    """spec.py declares each setting; the course's file holds only what the course changed, never a default again."""
    for field in dataclasses.fields(type(SPEC.settings)):
        assert field.metadata["meaning"] and field.type, field.name
    written = tomllib.loads(SPEC_FILE.read_text()).get("settings", {})
    defaults = {field.name: field.default for field in dataclasses.fields(type(SPEC.settings))}
    assert [key for key, value in written.items() if defaults.get(key) == value] == []


# --------------------------------------------------------------------------- everything else derives from it

def test_the_student_package_and_its_parts_are_the_spec_s():
    assert SPEC.exports == student._HOMES and student.__all__ == list(SPEC.exports)
    assert {part.number: (part.title, part.names) for part in SPEC.parts} == PARTS
    assert derived.stale() == []


def test_the_engine_the_scores_and_the_gradebook_take_the_parts_from_the_spec():
    assert SPEC.functions == executor.FUNCTIONS and SPEC.module_class == executor.MODULE_CLASS
    assert (SPEC.points, SPEC.titles) == (PART_POINTS, PART_TITLES)
    assert tuple(f"{module}.py" for module in SPEC.modules) == GRADED_MODULES
    assert [c for c in row.columns() if c.startswith("part")] == [f"part{n}" for n in SPEC.numbers]
    assert parts_using(1) == {2, 5, 6} and parts_using(6) == set()


def test_the_stubs_name_each_function_s_part_from_the_spec():
    for path in (REPO / "student" / module for module in GRADED_MODULES):
        for number, name in re.findall(r'"Part (\d+): ([\w.]+) is not implemented yet"', path.read_text()):
            assert SPEC.part_of(name) == int(number), (path.name, name)


def test_no_copy_of_the_parts_is_typed_by_hand_anywhere_else():
    """The six copies issue 21 found (PARTS, BUILDS_ON, _HOMES, FUNCTIONS, GRADED_MODULES, PART_POINTS...)
    are derived, not typed: no module but the spec spells a part's title or its points next to a number."""
    titles = [part.title for part in SPEC.parts]
    for path in _project_modules():
        if path.name in ("spec.py", "parts.py") or "tests" in path.parts[len(REPO.parts):][:1]:
            continue
        text = path.read_text()
        typed = [title for title in titles if f'"{title}"' in text]
        assert typed == [], f"{path.relative_to(REPO)} types the title(s) {typed} itself: take them from the spec"


# --------------------------------------------------------------------------- dependencies run one way

def _project_modules() -> list[pathlib.Path]:
    return [path for package in PACKAGES for path in sorted((REPO / package).rglob("*.py"))
            if "payloads" not in path.parts and "reference" not in path.parts]


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: pathlib.Path) -> set[str]:
    """Our modules path imports (at module level or inside functions), as dotted names."""
    found = set()
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parents = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parents + ([base] if base else []))
            submodules = {f"{base}.{alias.name}" for alias in node.names}
            found |= submodules
            if not any(_is_module(name) for name in submodules):   # `from package import module` needs the module
                found.add(base)
    return {name for name in found if name.split(".")[0] in PACKAGES}


def _is_module(dotted: str) -> bool:
    path = REPO.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def import_graph() -> dict[str, set[str]]:
    modules = {_module_name(path): path for path in _project_modules()}
    graph = {}
    for name, path in modules.items():
        graph[name] = {target for target in _imports(path) if target in modules and target != name}
    return graph


# What may import what (the spec imports nothing of the project; nothing of the grader imports the hidden suite
# or the student package; the runtime never imports the instructor's tools) is held by import-linter's contracts
# in pyproject.toml, which .ci/run checks (`lint-imports`). What they cannot say, that no import makes a cycle, is
# held here.
def test_no_two_packages_and_no_two_modules_import_each_other():
    graph = import_graph()
    package_edges = {(a.split(".")[0], b.split(".")[0]) for a, targets in graph.items() for b in targets}
    assert {(a, b) for a, b in package_edges if a != b and (b, a) in package_edges} == set()

    def cycle_from(start):
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for target in graph.get(node, ()):
                if target == start:
                    return [*path, start]
                if target not in seen:
                    seen.add(target)
                    stack.append((target, [*path, target]))
        return None

    cycles = [cycle for module in graph if (cycle := cycle_from(module))]
    assert cycles == []


def test_the_consistency_check_knows_every_public_name_of_the_gateway():
    """A hidden test may use the gateway's own names on `student` (student.run_module, student.second_device):
    consistency.GATEWAY_NAMES must list each, or the self-check calls them undeclared graded functions."""
    from autograder import consistency
    from grader.gateway import Gateway
    from grader.gateway.local import LocalGateway
    public = {name for name in [*dir(Gateway), *vars(LocalGateway(None))] if not name.startswith("_")}
    public -= {"note_path", "note_module", "close", "student", "unloadable", "import_error", "stopped", "note_source",
               "hiding", "hiding_parts"}   # not for the hidden tests
    assert public <= consistency.GATEWAY_NAMES
