"""What an instructor can get wrong when changing the assignment, found before any grading.

    problems(repo_spec)                      the spec, the derived files, the reference and the hidden suite
    student_view_problems(files, spec, origins)
                                             what students read (the handout's files, the student notebook)
                                             naming a part the spec does not declare, each at the line of the
                                             file to edit (origins: a stub's lines in its reference)

Each Problem names the file to fix and says what is wrong and how to mend it: points that do not add up
(assignment/spec.py refuses the declaration), a derived file not regenerated, a graded name the reference
does not define, a part whose reference calls another part it does not list in `uses`, a part with no
hidden test, a hidden test calling a name the spec does not declare or marked with the wrong part, and a
handout or notebook still naming a part the course dropped, a bug or variant of the zoo whose edit no
longer applies to the reference. `python -m autograder selfcheck` runs them all
and stops before grading when one is found; the reference failing its own suite is found by grading it.
"""
from __future__ import annotations

import ast
import json
import pathlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from assignment.spec import SPEC_FILE, Spec, SpecError, load
from autograder import derived, stubs
from grader.paths import GRADING_DIR, REFERENCE_DIR, REPO

# The names of the gateway itself (not graded functions) that a hidden test may use on `student`.
GATEWAY_NAMES = {"call", "run_module", "flags", "forbidden", "test", "second_device",   # grader/gateway/__init__.py
                 "start_afresh"}
# "Part 6", "Parts 5 and 6", "Parts 1, 2, 5 and 6", "check(6)", "--part 6", "part6" (a pytest marker), "part-6".
PART_MENTIONS = (re.compile(r"\b[Pp]arts?\s+(\d+(?:\s*(?:,|and|or|&)\s*\d+)*)"),
                 re.compile(r"\bcheck\((\d+)\)"), re.compile(r"--part[= ](\d+)"), re.compile(r"\bpart-?(\d+)\b"))


@dataclass(frozen=True)
class Problem:
    where: str    # the file to fix (relative to the repository), with a line or a test when known
    what: str     # what is wrong and what to do

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def _relative(path) -> str:
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


def load_spec() -> tuple[Spec | None, list[Problem]]:
    try:
        return load(SPEC_FILE), []
    except SpecError as error:
        return None, [Problem(_relative(SPEC_FILE), str(error).removeprefix(f"{SPEC_FILE.name}: "))]


def problems() -> list[Problem]:
    """Everything in the repository an instructor may have got wrong, the spec first (nothing else can be
    checked against a declaration that does not load)."""
    spec, found = load_spec()
    if spec is None:
        return found
    return [*derived_problems(spec), *reference_problems(spec), *zoo_problems(), *suite_problems(spec)]


def derived_problems(spec: Spec) -> list[Problem]:
    try:
        stale = derived.stale(spec)
    except (OSError, ValueError) as error:   # a region of a derived file that is gone, a reference that won't parse
        return [Problem("assignment/assignment.toml", f"the derived files cannot be made: {error}")]
    return [Problem(path, f"not what the spec and the reference derive: run `{derived.COMMAND}`") for path in stale]


# ---------------------------------------------------------------- the reference against the spec

def _defined(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """Qualified name -> function (methods as Class.method) of a module."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            found[node.name] = node
            found.update({f"{node.name}.{item.name}": item for item in node.body if isinstance(item, ast.FunctionDef)})
    return found


def reference_problems(spec: Spec) -> list[Problem]:
    found, defined = [], {}
    for module in spec.modules:
        path = REFERENCE_DIR / f"{module}.py"
        if not path.is_file():
            found.append(Problem(_relative(SPEC_FILE), f"a part's module {module!r} has no reference "
                                                        f"{_relative(path)}: write it, or fix the part's `module`"))
            continue
        defined[module] = _defined(ast.parse(path.read_text()))
    functions = {name: spec.part_of(name) for name in spec.functions}
    for part in spec.parts:
        known = defined.get(part.module)
        if known is None:
            continue
        for name in part.names:
            if name not in known:
                found.append(Problem(f"assignment/reference/{part.module}.py",
                                     f"Part {part.number} grades {name}, which the reference does not define "
                                     f"(rename it there, or fix the part's `names` in {SPEC_FILE.name})"))
                continue
            called = {node.id for node in ast.walk(known[name]) if isinstance(node, ast.Name)} & set(functions)
            missing = sorted({functions[callee] for callee in called} - {part.number} - set(part.uses))
            for used in missing:
                callees = sorted(c for c in called if functions[c] == used)
                found.append(Problem(_relative(SPEC_FILE),
                                     f"the reference's {name} (Part {part.number}) calls {', '.join(callees)} "
                                     f"(Part {used}): add {used} to Part {part.number}'s `uses`, so its feedback "
                                     f"names Part {used} as the part to fix first"))
    return found


def zoo_problems() -> list[Problem]:
    """Bugs and variants of the zoo whose edits no longer apply to the reference."""
    from autograder.zoo.bugs import BUGS
    from autograder.zoo.variants import VARIANTS

    return [Problem(f"autograder/zoo/{'bugs' if sample.part else 'variants'}.py",
                    f"{sample.name}: its edit no longer applies to the reference ({sample.stale}): update it")
            for sample in [*BUGS, *VARIANTS] if sample.stale]


# ---------------------------------------------------------------- the hidden suite against the spec

class _Collector:
    """pytest plugin: the hidden suite's items, collected only (nothing runs)."""

    def __init__(self):
        self.items = []

    def pytest_collection_modifyitems(self, items):
        self.items = list(items)


def collected_tests() -> list:
    """The hidden suite's test items (every part's, those of parts the spec dropped too)."""
    import pytest

    collector = _Collector()
    code = pytest.main([str(GRADING_DIR), "--collect-only", "-p", "no:cacheprovider", f"--rootdir={REPO}",
                        "-o", "addopts=", "-p", "no:terminal", "-W", "ignore"], plugins=[collector])
    if code not in (0, 5):
        raise RuntimeError(f"collecting {GRADING_DIR.name}/ failed (pytest exit {code}): run "
                           f"`python -m pytest {GRADING_DIR.name} --collect-only` to see why")
    return collector.items


FILE_PART = re.compile(r"test_part(\d+)_\w+\.py")


def suite_problems(spec: Spec) -> list[Problem]:
    found = []
    try:
        items = collected_tests()
    except RuntimeError as error:
        return [Problem(f"{GRADING_DIR.name}/", str(error))]
    counted: dict[int, int] = {}
    for item in items:
        marker = item.get_closest_marker("part")
        part = marker.args[0] if marker else None
        in_file = FILE_PART.fullmatch(item.path.name)
        where = f"{GRADING_DIR.name}/{item.path.name}::{item.name}"
        if in_file and part != int(in_file.group(1)):
            found.append(Problem(where, f"is marked part({part}) in the file of Part {in_file.group(1)}: mark it "
                                        f"@pytest.mark.part({in_file.group(1)}), or move it to the file of its part"))
        weight = item.get_closest_marker("weight")
        if part in spec.numbers and (weight.args[0] if weight else 1) > 0:
            counted[part] = counted.get(part, 0) + 1
    for part in spec.parts:
        if not counted.get(part.number):
            found.append(Problem(f"{GRADING_DIR.name}/", f"{part.label} has no hidden test worth points: add one to "
                                                         f"{GRADING_DIR.name}/test_part{part.number}_*.py marked "
                                                         f"@pytest.mark.part({part.number})"))
    found += unknown_names(spec)
    return found


def unknown_names(spec: Spec) -> list[Problem]:
    """Hidden tests calling student.<name> for a name the spec does not declare."""
    found = []
    for path in sorted(GRADING_DIR.glob("*.py")):
        tree = ast.parse(path.read_text())
        for function in (node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)):
            for node in ast.walk(function):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "student"
                        and node.attr not in spec.functions and node.attr not in GATEWAY_NAMES):
                    found.append(Problem(f"{GRADING_DIR.name}/{path.name}::{function.name}",
                                         f"calls student.{node.attr}, which {SPEC_FILE.name} does not declare "
                                         f"(its graded functions: {', '.join(spec.functions)})"))
    return found


# ---------------------------------------------------------------- what students read

def mentioned_parts(line: str) -> set[int]:
    numbers = set()
    for pattern in PART_MENTIONS:
        for match in pattern.finditer(line):
            numbers |= {int(n) for n in re.findall(r"\d+", match.group(1))}
    return numbers


def _readable(name: str, text: str) -> list[str]:
    """The lines a student reads: a notebook's cell sources (each line), else the file's lines."""
    if name.endswith(".ipynb"):
        cells = json.loads(text)["cells"]
        return [line for cell in cells for line in "".join(cell["source"]).splitlines()]
    return text.splitlines()


def student_view_problems(files: dict[str, str], spec: Spec,
                          origins: dict[str, list[int]] | None = None) -> list[Problem]:
    """files: name -> text of what students receive (the handout's files, the student notebook), each under the
    name of the file an instructor edits to change it; origins: name -> the line of that file each line of the
    text comes from, where the two differ (a stub's lines, from its reference). Every line that names a part the
    spec does not declare, and every line of a docstring of given code (a function of a graded module that no
    part grades, as _fused_attention once Part 6 is dropped) that still says how the grader checks it."""
    def where(name: str, number: int) -> str:
        if name.endswith(".ipynb"):   # the student notebook's lines are not the master's
            return name
        lines = (origins or {}).get(name)
        return f"{name}:{lines[number - 1] if lines else number}"

    found = [*_given_code_problems(files, spec, where)]
    for name, text in sorted(files.items()):
        for number, line in enumerate(_readable(name, text), start=1):
            gone = sorted(mentioned_parts(line) - set(spec.numbers))
            if gone:
                listed = ", ".join(map(str, gone))
                found.append(Problem(where(name, number),
                                     f"names Part {listed}, which the spec does not declare: {line.strip()[:100]!r}"))
    return found


def _given_code_problems(files: dict[str, str], spec: Spec, where: Callable[[str, int], str]) -> list[Problem]:
    graded = {name for part in spec.parts for name in part.names}
    modules = {f"{module}.py" for module in spec.modules}
    found = []
    for name, text in sorted(files.items()):
        if name.endswith(".ipynb") or pathlib.PurePosixPath(name).name not in modules:
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue   # the reference's own problems are found elsewhere
        lines = text.splitlines()
        for qualname, node in stubs.functions(tree):
            if qualname in graded or ast.get_docstring(node) is None:
                continue
            docstring = node.body[0]
            for number in range(docstring.lineno, docstring.end_lineno + 1):   # its lines as students read them
                if "grader" in (line := lines[number - 1]):
                    found.append(Problem(where(name, number),
                                         f"the docstring of {qualname}, which no part grades, says how the grader "
                                         f"checks it: {line.strip()[:100]!r}"))
    return found
