"""Write the student stubs from the reference solution, so the two cannot drift.

The reference modules in assignment/reference/ mark each graded body with
`# BEGIN SOLUTION` ... `# END SOLUTION`. A stub is the same file with every such
block replaced by `raise NotImplementedError("Part N: <name> is not implemented yet")`:
same names, signatures, docstrings and imports.
"""
import ast
import pathlib
import sys

from autograder.paths import REFERENCE_DIR, STUDENT_DIR
from student.parts import part_of

GRADED_MODULES = ("scaling.py", "masking.py", "heads.py", "padding.py", "multihead.py")
BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"


def _qualnames_by_line(tree: ast.Module) -> dict[int, str]:
    """Map every line of every function to the function's qualified name (innermost wins)."""
    owner: dict[int, str] = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if isinstance(child, ast.FunctionDef):
                    for line in range(child.lineno, child.end_lineno + 1):
                        owner[line] = name
                visit(child, name + ".")

    visit(tree, "")
    return owner


def stub_source(reference_source: str) -> str:
    """The stub text for one reference module."""
    owner = _qualnames_by_line(ast.parse(reference_source))
    out, inside = [], False
    for number, line in enumerate(reference_source.splitlines(keepends=True), start=1):
        marker = line.strip()
        if marker == BEGIN:
            if inside:
                raise ValueError(f"line {number}: {BEGIN} inside another solution block")
            inside = True
            name = owner.get(number)
            if name is None:
                raise ValueError(f"line {number}: solution block outside any function")
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f'{indent}raise NotImplementedError("Part {part_of(name)}: {name} is not implemented yet")\n')
        elif marker == END:
            if not inside:
                raise ValueError(f"line {number}: {END} without {BEGIN}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{BEGIN} never closed")
    return "".join(out)


def generated_stubs() -> dict[str, str]:
    """File name -> stub text, for every graded module."""
    return {name: stub_source((REFERENCE_DIR / name).read_text()) for name in GRADED_MODULES}


def write_stubs(student_dir: pathlib.Path = STUDENT_DIR) -> list[str]:
    """Regenerate the stubs in student_dir; returns the names of the files that changed."""
    changed = []
    for name, text in generated_stubs().items():
        target = student_dir / name
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
            changed.append(name)
    return changed


def main(argv=None) -> int:
    changed = write_stubs()
    print("stubs regenerated: " + (", ".join(changed) if changed else "nothing changed"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
