"""Prove a handout zip holds nothing hidden: no grading test, no reference code, no hidden expected value.

    find_leaks(zip_path) -> list of one-line findings (empty: clean)

What counts as hidden, all read from the repository at check time:
- any file under grading_tests/ or assignment/, by path or by identical content;
- the solution markers, and every substantial line inside a graded `# BEGIN SOLUTION` block of the reference;
- the names of hidden tests (test functions of grading_tests/ that the public checks do not share);
- numeric literals of the hidden suite with 4+ significant digits that the public checks do not show.
"""
from __future__ import annotations

import ast
import pathlib
import re
import zipfile

from autograder.stubs import BEGIN, END, solution_blocks
from grader.paths import GRADING_DIR, REFERENCE_DIR, REPO

PUBLIC_TESTS_DIR = REPO / "student" / "tests"
# A solution line shorter than this (`return x`, `S = L`) says nothing about the solution.
MIN_SOLUTION_LINE = 16
NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+(?:e-?\d+)?")


def solution_lines() -> set[str]:
    """Stripped lines inside the graded solution blocks of the reference, long enough to be telling (a block
    of a function no part grades is handed out as given code)."""
    lines = set()
    for module in sorted(REFERENCE_DIR.glob("*.py")):
        for block in solution_blocks(module.read_text()):
            if block.part is not None:
                lines.update(line.strip() for line in block.lines
                             if len(line.strip()) >= MIN_SOLUTION_LINE and not line.strip().startswith("#"))
    return lines


def _test_names(folder: pathlib.Path) -> set[str]:
    names = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
                names.add(node.name)
    return names


def _significant_digits(literal: str) -> int:
    mantissa = literal.lstrip("-").split("e")[0].replace(".", "").lstrip("0")
    return len(mantissa)


def _numbers(folder: pathlib.Path) -> set[str]:
    found = set()
    for path in folder.rglob("*.py"):
        found.update(NUMBER.findall(path.read_text()))
    return found


def hidden_test_names() -> set[str]:
    return _test_names(GRADING_DIR) - _test_names(PUBLIC_TESTS_DIR)


def hidden_numbers() -> set[str]:
    public = _numbers(PUBLIC_TESTS_DIR)
    return {n for n in _numbers(GRADING_DIR) - public if _significant_digits(n) >= 4}


def _hidden_contents() -> dict[bytes, str]:
    contents = {}
    for folder in (GRADING_DIR, REPO / "assignment"):
        for path in folder.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.stat().st_size > 0:
                contents[path.read_bytes()] = str(path.relative_to(REPO))
    return contents


def _readable_text(name: str, data: bytes) -> str:
    """The text a person would read: a notebook's cell sources and outputs, else the decoded bytes."""
    text = data.decode("utf-8", errors="replace")
    if name.endswith(".ipynb"):
        import nbformat
        notebook = nbformat.reads(text, as_version=4)
        parts = [cell.source for cell in notebook.cells]
        parts += [str(output) for cell in notebook.cells for output in cell.get("outputs", [])]
        text = "\n".join([*parts, text])
    return text


def find_leaks(zip_path) -> list[str]:
    findings = []
    solution = solution_lines()
    test_names = hidden_test_names()
    numbers = hidden_numbers()
    contents = _hidden_contents()
    with zipfile.ZipFile(zip_path) as zf:
        for name in zf.namelist():
            top = name.split("/", 1)[0]
            if top in ("grading_tests", "assignment", "grader", "autograder"):
                findings.append(f"{name}: instructor-only folder {top}/ in the handout")
            data = zf.read(name)
            if data in contents:
                findings.append(f"{name}: a copy of {contents[data]}")
            text = _readable_text(name, data)
            for marker in (BEGIN, END):
                if marker in text:
                    findings.append(f"{name}: contains the marker {marker!r}")
            flat = {line.strip() for line in text.splitlines()}
            for line in sorted(solution & flat):
                findings.append(f"{name}: reference solution line {line!r}")
            for test in sorted(t for t in test_names if re.search(rf"\b{re.escape(t)}\b", text)):
                findings.append(f"{name}: names the hidden test {test}")
            for number in sorted(n for n in numbers if re.search(rf"(?<![\w.]){re.escape(n)}(?!\d)", text)):
                findings.append(f"{name}: holds {number}, a value only the hidden suite has")
    return findings
