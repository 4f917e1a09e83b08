"""Correct submissions in the styles students write them, generated from the reference: all must score 100.

    write(folder) -> [Generated, ...]     one submission folder per style

Each is the reference, transformed by a rule, not written by hand, so a new graded function gets every
style at once:

    torch-compile         every graded function and method (but __init__) under @torch.compile
    prints                every graded function prints its inputs and its result (stdout and stderr)
    no-grad-mask-builders @torch.no_grad() on each function whose docstring says it returns a bool tensor
    numpy-and-math        numpy and math imported and used on the way into every graded function
    cuda-branches         a CUDA device picked when there is one, a branch taken only on CUDA tensors
    helper-modules        all the code in a helpers/ package; the graded modules only import from it
    all-at-once           every habit above together
"""
from __future__ import annotations

import ast
import pathlib
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass

from assignment.spec import SPEC, Spec
from autograder.adequacy.adversaries import Generated
from autograder.samples import write_submission
from grader.paths import REFERENCE_DIR

RUNTIME = pathlib.Path(__file__).parent / "runtime" / "style.py"
_RETURNS_BOOL = re.compile(r"Returns:\s*\n\s*bool\b")


@dataclass(frozen=True)
class Habit:
    decorator: str                           # the decorator's text, after "@"
    applies: Callable[[str, ast.FunctionDef], bool]   # (qualname, its def) -> whether it gets the decorator
    header: str = "from student._style import DEVICE, on_cuda_too, shown, via_numpy  # noqa: F401"


def _not_init(qualname, _node):
    return not qualname.endswith("__init__")


def _returns_bool(_qualname, node):
    return bool(_RETURNS_BOOL.search(ast.get_docstring(node) or ""))


HABITS = {
    "prints": Habit("shown", lambda *_: True),
    "no-grad-mask-builders": Habit("torch.no_grad()", _returns_bool),
    "numpy-and-math": Habit("via_numpy", lambda *_: True),
    "cuda-branches": Habit("on_cuda_too", lambda *_: True),
    "torch-compile": Habit("torch.compile", _not_init),   # last: the outermost decorator
}
STYLES = {**{name: (name,) for name in HABITS}, "helper-modules": (), "all-at-once": tuple(HABITS)}
IN_HELPERS = {"helper-modules", "all-at-once"}


def _graded_defs(tree: ast.Module, graded: set[str]):
    """(qualname, def) of each graded function and method of a module."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in graded:
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for child in node.body:
                if isinstance(child, ast.FunctionDef) and f"{node.name}.{child.name}" in graded:
                    yield f"{node.name}.{child.name}", child


def decorated(source: str, graded: set[str], habits) -> str:
    """source with each habit's decorator on the graded defs it applies to (the first habit innermost)."""
    for habit in habits:
        tree = ast.parse(source)
        lines = source.splitlines(keepends=True)
        inserts = []
        for qualname, node in _graded_defs(tree, graded):
            if habit.applies(qualname, node):
                top = min([node.lineno] + [d.lineno for d in node.decorator_list])
                inserts.append((top - 1, " " * node.col_offset + f"@{habit.decorator}\n"))
        if habit.header not in source:
            last_import = max(n.end_lineno for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)))
            inserts.append((last_import, habit.header + "\n"))
        for index, text in sorted(inserts, reverse=True):
            lines.insert(index, text)
        source = "".join(lines)
    return source


def write_one(dest: pathlib.Path, style: str, spec: Spec = SPEC) -> pathlib.Path:
    write_submission(dest)
    package = dest / "student"
    shutil.copyfile(RUNTIME, package / "_style.py")
    habits = [HABITS[name] for name in STYLES[style]]
    home = package / "helpers" if style in IN_HELPERS else package
    home.mkdir(exist_ok=True)
    if style in IN_HELPERS:
        (home / "__init__.py").write_text('"""Where the code lives; the graded modules import from here."""\n')
    for path in sorted(REFERENCE_DIR.glob("*.py")):
        module = path.stem
        graded = {name for part in spec.parts if part.module == module for name in part.names}
        (home / path.name).write_text(decorated(path.read_text(), graded, habits))
        if style in IN_HELPERS:
            names = sorted(name for name, where in spec.exports.items() if where == module)
            (package / path.name).write_text(f'"""The graded names, from student/helpers/{path.name}."""\n'
                                             f"from .helpers.{module} import {', '.join(names)}  # noqa: F401\n")
    return dest


def write(folder: pathlib.Path, styles=tuple(STYLES)) -> list[Generated]:
    folder = pathlib.Path(folder)
    found = []
    for style in styles:
        name = f"style-{style}"
        write_one(folder / name, style)
        found.append(Generated(name, "style", f"correct, written as: {style}"))
    return found
