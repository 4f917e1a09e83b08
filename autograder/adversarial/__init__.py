"""The adversarial zoo: hostile submissions and exactly what the grading engine must give each one.

    expectations = write_adversarial_zoo(root)      # one submission per child of root
    python -m autograder grade root --out OUT
    problems = verify(expectations, OUT)            # [] when every one was graded as required

Families: cheats on top of the stubs (must score exactly 0), resource abuse on top of the
reference in one function (must cost that function's part only, compared with the
"reference" row of the same batch), broken or hostile files (an error row that says why),
and the controls "reference" (100) and "stubs" (0).
Used by tests/test_engine*.py and by `python -m autograder selfcheck`.
"""
from __future__ import annotations

import os
import pathlib

from assignment.spec import SPEC, Spec
from autograder.adversarial import abuse, bounds, channels, cheats, escapes, inputs, memory, sdpa_calls, unread
from autograder.adversarial.base import Context, Entry
from autograder.adversarial.expectations import (
    Expectation,
    ipc_objects_with_key,
    posix_queue_exists,
    processes_running,
    read_rows,
    result_files,
    verify,
)
from autograder.samples import write_submission

__all__ = ["Expectation", "entries", "ipc_objects_with_key", "markers_folder", "posix_queue_exists",
           "processes_running", "read_rows",
           "remove_planted", "result_files", "verify", "write_adversarial_zoo"]

CONTROLS = [
    Entry(Expectation("reference", "control", "graded", "the reference solution", score=100.0),
          lambda dest, _context: write_submission(dest)),
    Entry(Expectation("stubs", "control", "graded", "the untouched stubs", score=0.0),
          lambda dest, _context: write_submission(dest, solution=False)),
]


def markers_folder(root) -> pathlib.Path:
    """Beside the zoo (never inside it, where it would count as a submission); only root can write there."""
    root = pathlib.Path(root).resolve()
    return root.with_name(root.name + "-markers")


def entries(root, *, isolated: bool | None = None, spec: Spec = SPEC) -> list[Entry]:
    """Every zoo entry; those that would really hurt an unisolated grader only when isolated (default: as root);
    none whose points are lost only in parts the spec does not declare (a course that dropped Part 6 grades no
    fused path, so a fused path computed by hand costs nothing there, as the zoo's bugs of that part are left out)."""
    isolated = os.geteuid() == 0 if isolated is None else isolated
    context = Context(pathlib.Path(root).resolve(), markers_folder(root))
    found = [*CONTROLS, *cheats.entries(context), *abuse.entries(context), *memory.entries(context),
             *inputs.entries(context), *escapes.entries(context), *channels.entries(context),
             *unread.entries(context), *bounds.entries(context), *sdpa_calls.entries(context)]
    return [entry for entry in found if (isolated or not entry.needs_root) and _in_spec(entry.expectation, spec)]


def _in_spec(expectation: Expectation, spec: Spec) -> bool:
    return not expectation.lost_parts or bool(set(expectation.lost_parts) & set(spec.numbers))


def remove_planted(root) -> None:
    """Remove what the zoo's writers planted outside the zoo (a world-readable clone of the hidden tests)."""
    escapes.remove_planted(Context(pathlib.Path(root).resolve(), markers_folder(root)))


def write_adversarial_zoo(root, *, isolated: bool | None = None) -> list[Expectation]:
    """Write every submission of the zoo into root (created; must be empty) and return their expectations."""
    root = pathlib.Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        raise FileExistsError(f"{root} is not empty")
    context = Context(root, markers_folder(root))
    context.markers.mkdir(mode=0o700, exist_ok=True)
    chosen = entries(root, isolated=isolated)
    for entry in chosen:
        entry.write(root / (entry.expectation.name + entry.suffix), context)
    return [entry.expectation for entry in chosen]
