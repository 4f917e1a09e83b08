"""Every file the spec (assignment/assignment.toml), the reference and the code's tables derive, written or checked.

    python -m autograder generate          rewrite the derived files after editing the spec or the reference

The derived files are checked in (students receive them in the handout), and a project test, the build
and the self-check refuse any that drifted from what this module writes:

    student/__init__.py                  the graded names and the module of student/ that defines each
    student/parts.py                     the parts: number, title, graded names, what each builds on
    student/<module>.py                  the stubs (autograder/stubs.py)
    handout/README.md                    its table of parts, between the PARTS TABLE markers
    assignment/notebook/attention.ipynb  the same table in its first cell, between the same markers
    docs/design.md                       the table of kernel layers (grader/contain/isolation.py's TABLE), between
                                         the LAYERS TABLE markers
    docs/graders.md                      the table of grades.csv's columns (grader/row.py's Row), between the
                                         COLUMNS TABLE markers
    docs/instructors.md                  the table of the course's settings (assignment/spec.py's Settings), between
                                         the SETTINGS TABLE markers
"""
from __future__ import annotations

import json
import pathlib
import sys
from dataclasses import dataclass

from assignment.spec import SPEC, Spec, setting_fields
from autograder.otter.image import DISTRIBUTIONS
from autograder.stubs import generated_stubs
from grader.contain.isolation import TABLE as LAYERS
from grader.paths import MASTER_NOTEBOOK, REPO, STUDENT_DIR
from grader.row import described_columns

HANDOUT_README = REPO / "handout" / "README.md"
TABLE_BEGIN = "<!-- BEGIN PARTS TABLE: generated from assignment/assignment.toml by `python -m autograder generate` -->"
TABLE_END = "<!-- END PARTS TABLE -->"
COMMAND = "python -m autograder generate"


@dataclass(frozen=True)
class DocTable:
    """A table of a document generated from the code, between its BEGIN and END markers."""
    document: str   # relative to the repository
    name: str       # "LAYERS" for the LAYERS TABLE markers
    source: str     # what it is generated from, as its BEGIN marker says
    what: str

    @property
    def begin(self) -> str:
        return f"<!-- BEGIN {self.name} TABLE: generated from {self.source} by `{COMMAND}` -->"

    @property
    def end(self) -> str:
        return f"<!-- END {self.name} TABLE -->"


def init_source(spec: Spec = SPEC) -> str:
    homes = "\n".join(f"    {_py(name)}: {_py(module)}," for name, module in spec.exports.items())
    return f'''"""{spec.title}: the graded API.

The grader imports this package and uses only the names below; organise the
rest of your code however you like. Run `python -m student.check` to see
which parts pass the public checks.

Each name is imported from its module on first use, so a mistake in one file
(a syntax error, a missing package) does not stop the checks, or the grading,
of the other parts.
"""
import importlib

# Generated from the assignment's declaration: do not edit (your instructor's `{COMMAND}`).
# name -> the module of this package that defines it
_HOMES = {{
{homes}
}}

__all__ = list(_HOMES)


def __getattr__(name):
    if name not in _HOMES:
        raise AttributeError(f"module {{__name__!r}} has no attribute {{name!r}}")
    value = getattr(importlib.import_module(f"{{__name__}}.{{_HOMES[name]}}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
'''


def parts_source(spec: Spec = SPEC) -> str:
    parts = "\n".join(f"    {part.number}: ({_py(part.title)}, {_py(part.names)})," for part in spec.parts)
    return f'''"""The parts of the assignment: their numbers, titles and the graded names in each.

The local checks (student.check) print their table in this order.
"""
import re

# Generated from the assignment's declaration: do not edit (your instructor's `{COMMAND}`).
PARTS = {{
{parts}
}}

# What the grader can import besides Python's standard library: a module of yours that imports anything else
# fails to import there, and its functions score 0 (`python -m student.submit` warns about it).
GRADER_PACKAGES = {_py(tuple(sorted(DISTRIBUTIONS)))}

# What every stub raises until it is written (the stubs are generated with exactly this text).
_STUB_MESSAGE = re.compile(r"Part (\\d+): ([\\w.]+) is not implemented yet")


def part_of(qualname: str) -> int:
    """The part a graded function or method belongs to."""
    for number, (_title, names) in PARTS.items():
        if qualname in names:
            return number
    raise KeyError(f"{{qualname}} belongs to no part")


def is_stub_message(text: str) -> bool:
    """True for the text a stub raises: "Part N: <name> is not implemented yet"."""
    return _STUB_MESSAGE.fullmatch(text) is not None


def is_stub_error(error: BaseException) -> bool:
    """True only for a stub's own `NotImplementedError("Part N: <name> is not implemented yet")`.

    PyTorch raises NotImplementedError too (an operation a dtype does not support, say): that
    is a real error in written code, not a part left to do.
    """
    return isinstance(error, NotImplementedError) and is_stub_message(str(error))
'''


def _py(value) -> str:
    """A Python literal as the project writes them (double-quoted strings, tuples)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, tuple):
        items = ", ".join(_py(item) for item in value)
        return f"({items},)" if len(value) == 1 else f"({items})"
    return repr(value)


def parts_table(spec: Spec = SPEC) -> str:
    """The table of parts students read (the handout's README and the notebook's first cell)."""
    rows = ["| Part | Points | File | You implement |", "|---|---|---|---|"]
    for part in spec.parts:
        names = ", ".join(f"`{name}`" for name in part.names)
        rows.append(f"| {part.number} {part.title} | {part.points:g} | `student/{part.module}.py` | {names} |")
    return "\n".join(rows)


def with_table(text: str, where: str, spec: Spec = SPEC) -> str:
    """text with the region between the PARTS TABLE markers replaced by the spec's table."""
    return _between(text, where, TABLE_BEGIN, TABLE_END, parts_table(spec), "the table of parts")


def layers_table() -> str:
    """The table of kernel layers and what each stops (docs/design.md)."""
    return "\n".join(["| layer | what it stops |", "|---|---|",
                      *(f"| `{layer.name}` | {layer.stops} |" for layer in LAYERS)])


def columns_table() -> str:
    """The table of grades.csv's columns, in order, and what each holds (docs/graders.md, inside a list item)."""
    def label(cells: tuple[str, ...]) -> str:
        shown = (cells[0], "…", cells[-1]) if len(cells) > 3 else cells
        return ", ".join(cell if cell == "…" else f"`{cell}`" for cell in shown)
    return "\n".join(["  | column | what it holds |", "  |---|---|",
                      *(f"  | {label(cells)} | {meaning[0].upper() + meaning[1:]}. |"
                        for cells, meaning in described_columns())])


def settings_table() -> str:
    """The table of the course's settings: each one's key, default and meaning (docs/instructors.md)."""
    def default(value) -> str:
        return "absent" if value is None else f"`{str(value).lower() if isinstance(value, bool) else value}`"
    rows = [(key, default(the_field.default), the_field.metadata["meaning"].replace("|", "\\|"))
            for key, (the_field, _kind) in setting_fields().items()]
    return "\n".join(["| setting | default | what it does |", "|---|---|---|",
                      *(f"| `{key}` | {value} | {meaning} |" for key, value, meaning in rows)])


def _between(text: str, where: str, begin: str, end: str, body: str, what: str) -> str:
    """text with the region between the markers begin and end replaced by body."""
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise ValueError(f"{where} has no {begin!r} ... {end!r} region for {what}")
    indent = text[text.rfind("\n", 0, start) + 1:start]   # the markers' own (a table inside a list item keeps it)
    return text[:start] + begin + "\n" + body + "\n" + (indent if not indent.strip() else "") + text[stop:]


def notebook_source(text: str, spec: Spec = SPEC) -> str:
    """The master notebook's JSON with the table of parts of its first markdown cell regenerated."""
    notebook = json.loads(text)
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and TABLE_BEGIN in source:
            cell["source"] = with_table(source, MASTER_NOTEBOOK.name, spec).splitlines(keepends=True)
            break
    else:
        raise ValueError(f"{MASTER_NOTEBOOK.name} has no markdown cell with the table of parts ({TABLE_BEGIN!r})")
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


# Each document table -> what writes its body.
DOC_TABLES = {
    DocTable("docs/design.md", "LAYERS", "grader/contain/isolation.py's TABLE", "the table of kernel layers"):
        layers_table,
    DocTable("docs/graders.md", "COLUMNS", "grader/row.py's Row", "the table of grades.csv's columns"): columns_table,
    DocTable("docs/instructors.md", "SETTINGS", "assignment/spec.py's Settings", "the table of the course's settings"):
        settings_table,
}


def derived_files(spec: Spec = SPEC) -> dict[pathlib.Path, str]:
    """Each derived file -> the text it must hold."""
    files = {STUDENT_DIR / "__init__.py": init_source(spec), STUDENT_DIR / "parts.py": parts_source(spec)}
    files.update({STUDENT_DIR / name: text for name, text in generated_stubs(spec).items()})
    files[HANDOUT_README] = with_table(HANDOUT_README.read_text(), "handout/README.md", spec)
    files[MASTER_NOTEBOOK] = notebook_source(MASTER_NOTEBOOK.read_text(), spec)
    for table, body in DOC_TABLES.items():
        path = REPO / table.document
        files[path] = _between(path.read_text(), table.document, table.begin, table.end, body(), table.what)
    return files


def stale(spec: Spec = SPEC) -> list[str]:
    """The derived files (paths relative to the repository) that differ from what the spec derives."""
    return [str(path.relative_to(REPO)) for path, text in derived_files(spec).items()
            if not path.exists() or path.read_text() != text]


def stale_message(paths: list[str]) -> str:
    return (f"{', '.join(paths)} no longer match(es) assignment/assignment.toml, assignment/reference/ and the "
            f"code's tables: run `{COMMAND}`")


def write(spec: Spec = SPEC) -> list[str]:
    """Rewrite the derived files that drifted; returns their paths (relative to the repository)."""
    changed = []
    for path, text in derived_files(spec).items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(str(path.relative_to(REPO)))
    return changed


def main(argv=None) -> int:
    if argv:
        print(f"usage: {COMMAND}   (no options: it rewrites what assignment/assignment.toml derives)",
              file=sys.stderr)
        return 2
    changed = write()
    print("rewrote " + ", ".join(changed) if changed else "every derived file is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
