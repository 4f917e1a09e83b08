"""The student stubs, made from the reference solution so the two cannot drift.

The reference modules in assignment/reference/ mark each graded body with
`# BEGIN SOLUTION` ... `# END SOLUTION`. A stub is the same file with every such block
replaced by `raise NotImplementedError("Part N: <name> is not implemented yet")`, N the part the
function belongs to in the spec: same names, signatures, docstrings and imports. A block in a
function that no part of the spec grades (a part the course dropped) is handed out as given code:
its body is kept and only the markers go. `python -m autograder generate` writes the stubs with
the rest of what the spec derives (autograder/derived.py).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from assignment.spec import SPEC, Spec
from grader.paths import REFERENCE_DIR

GRADED_MODULES = tuple(f"{module}.py" for module in SPEC.modules)
BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"


@dataclass(frozen=True)
class Block:
    """One solution block of a reference module."""
    function: str            # its function's qualified name ("MultiHeadAttention.forward")
    part: int | None         # the part grading that function; None: no part of the spec does
    first: int               # line numbers (1-based) of the BEGIN and END markers
    last: int
    indent: str
    lines: tuple[str, ...]   # the solution's lines, between the markers


def functions(node: ast.AST, prefix: str = ""):
    """(qualified name, node) of every function and method under node, each before the ones nested in it."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.ClassDef)):
            if isinstance(child, ast.FunctionDef):
                yield prefix + child.name, child
            yield from functions(child, prefix + child.name + ".")


def _qualnames_by_line(tree: ast.Module) -> dict[int, str]:
    """Map every line of every function to the function's qualified name (innermost wins)."""
    owner: dict[int, str] = {}
    for name, function in functions(tree):   # an outer function before the ones nested in it
        for line in range(function.lineno, function.end_lineno + 1):
            owner[line] = name
    return owner


def solution_blocks(reference_source: str, spec: Spec = SPEC) -> list[Block]:
    """The solution blocks of one reference module; ValueError for a marker out of place."""
    owner = _qualnames_by_line(ast.parse(reference_source))
    lines = reference_source.splitlines(keepends=True)
    blocks, start = [], None
    for number, line in enumerate(lines, start=1):
        marker = line.strip()
        if marker == BEGIN:
            if start is not None:
                raise ValueError(f"line {number}: {BEGIN} inside another solution block")
            if owner.get(number) is None:
                raise ValueError(f"line {number}: solution block outside any function")
            start = number
        elif marker == END:
            if start is None:
                raise ValueError(f"line {number}: {END} without {BEGIN}")
            name = owner[start]
            try:
                part = spec.part_of(name)
            except KeyError:
                part = None
            indent = lines[start - 1][: len(lines[start - 1]) - len(lines[start - 1].lstrip())]
            blocks.append(Block(name, part, start, number, indent, tuple(lines[start:number - 1])))
            start = None
    if start is not None:
        raise ValueError(f"{BEGIN} never closed")
    return blocks


def _stub_lines(reference_source: str, spec: Spec) -> list[tuple[int, str]]:
    """(the line of the reference it comes from, text) of every line of one module's stub; a stub's raise comes
    from its block's BEGIN marker."""
    lines = list(enumerate(reference_source.splitlines(keepends=True), start=1))
    out, position = [], 0
    for block in solution_blocks(reference_source, spec):
        out += lines[position:block.first - 1]
        if block.part is None:
            out += lines[block.first:block.last - 1]
        else:
            out.append((block.first, f'{block.indent}raise NotImplementedError("Part {block.part}: {block.function} '
                                     f'is not implemented yet")\n'))
        position = block.last
    return out + lines[position:]


def stub_source(reference_source: str, spec: Spec = SPEC) -> str:
    """The stub text for one reference module."""
    return "".join(text for _line, text in _stub_lines(reference_source, spec))


def reference_lines(reference_source: str, spec: Spec = SPEC) -> list[int]:
    """For each line of the module's stub (line N at index N - 1), the line of the reference an instructor edits
    to change it."""
    return [line for line, _text in _stub_lines(reference_source, spec)]


def generated_stubs(spec: Spec = SPEC) -> dict[str, str]:
    """File name -> stub text, for every graded module."""
    return {f"{module}.py": stub_source((REFERENCE_DIR / f"{module}.py").read_text(), spec)
            for module in spec.modules}
