"""The master notebook as the build reads it: only the spec's parts, and no Otter question with tests of its own.

    for_spec(text, spec)          the master's JSON without the cells of parts the spec does not declare
    questions_with_tests(text)    the Otter questions that carry their own tests (refused by the build)
    questions_with_points(text)   the Otter questions that carry points (refused: nothing would grade them)

A cell tagged `part-N` belongs to Part N (or needs it, as the epilogue needs Part 5): when the spec has
no Part N, the cell is left out of both versions of the notebook, so a course that drops a part drops its
section, its check cell and its questions with one edit of assignment/assignment.toml.

Only student/ is graded (by grading_tests/). An Otter question with `# BEGIN TESTS` cells would ship a
`grader.check(...)` cell that fails in the handout and points that are never graded, so the build refuses
it and says where the test belongs instead. The markers are Otter Assign's (otter/assign/blocks.py): raw
cells whose first line is `# BEGIN QUESTION`, `# BEGIN TESTS`, `# END TESTS`, `# END QUESTION`. A question's
`points:` (a manual one's too) would be points that exist nowhere: the spec's parts are the whole grade.
"""
from __future__ import annotations

import json
import re

from assignment.spec import SPEC, Spec

PART_TAG = re.compile(r"part-(\d+)")


def _marker(cell: dict, begin_or_end: str, block: str) -> bool:
    source = "".join(cell.get("source", ""))
    first = source.splitlines()[0] if source else ""
    return cell.get("cell_type") == "raw" and re.match(rf"#\s+{begin_or_end}\s+{block}\s*", first, re.I) is not None


def cell_parts(cell: dict) -> set[int]:
    """The parts a cell belongs to (its `part-N` tags)."""
    tags = cell.get("metadata", {}).get("tags", [])
    return {int(match.group(1)) for tag in tags if (match := PART_TAG.fullmatch(tag))}


def for_spec(text: str, spec: Spec = SPEC) -> str:
    """The master notebook's JSON without the cells of parts the spec does not declare."""
    notebook = json.loads(text)
    notebook["cells"] = [cell for cell in notebook["cells"] if cell_parts(cell) <= set(spec.numbers)]
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def questions_with_tests(text: str) -> list[str]:
    """'q_name (cell N)' for every Otter question of the master notebook with tests of its own."""
    found, question, start = [], None, 0
    inside_tests = False
    for index, cell in enumerate(json.loads(text)["cells"]):
        if _marker(cell, "begin", "question"):
            source = "".join(cell["source"])
            name = re.search(r"^name:\s*(\S+)", source, re.M)
            question, start = (name.group(1) if name else "an unnamed question"), index
        elif _marker(cell, "end", "question"):
            question = None
        elif _marker(cell, "begin", "tests"):
            inside_tests = True
        elif _marker(cell, "end", "tests"):
            inside_tests = False
        elif inside_tests and cell.get("cell_type") == "code":
            label = f"{question or 'a test outside any question'} (cell {start if question else index})"
            if label not in found:
                found.append(label)
    return found


def questions_with_points(text: str) -> list[str]:
    """'q_name (cell N): points: 5' for every Otter question of the master notebook whose configuration gives it
    points (any number but 0, or a list of them)."""
    found = []
    for index, cell in enumerate(json.loads(text)["cells"]):
        if _marker(cell, "begin", "question"):
            source = "".join(cell["source"])
            points = re.search(r"^points:\s*(.+?)\s*$", source, re.M)
            if points and any(float(number) for number in re.findall(r"\d+(?:\.\d*)?", points.group(1))):
                name = re.search(r"^name:\s*(\S+)", source, re.M)
                found.append(f"{name.group(1) if name else 'an unnamed question'} (cell {index}): "
                             f"points: {points.group(1)}")
    return found
