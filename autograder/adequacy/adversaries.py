"""Submissions that compute nothing, generated from the reference: the floor of the grade.

    write(folder) -> [Generated, ...]     one submission folder per strategy

Each is the handout with every graded module replaced by a thin layer over a private copy of the reference
(student/_reference/): a graded call runs the reference, so the answer has the right type, shape, dtype and
device and the contract's ValueErrors are raised as they should be, and then every value of the answer is
replaced by one made without looking at the inputs' values (autograder/adequacy/runtime/adversary.py):

    random        fresh random values on every call (bools: random too)
    zeros, ones   one value everywhere (all False, all True)
    pattern       the same varied values for every call of a shape (not one repeated value)
    meta          meta tensors: the shape and dtype, no values at all
    memo          random, but the same answer again for a call of the same shapes, and an answer handed back
                  (merge_heads of what split_heads gave) gets back the input it was given for
    other-inputs  the right function of other inputs: every tensor argument, and the module's weights,
                  replaced by fixed random ones (rows of weights then sum to 1, masks look like masks)
    lookup        the reference's answer to every call the handout shows (public checks and notebook cells,
                  harvest.py), also as one item of a batch; random for anything else

The module's __init__ is the reference's (it returns nothing to fake): its tests are gated on forward.
A no-computation submission must score at most FLOOR points (report.py checks each). One more, the control,
is the same layer answering right: it must score full marks, or the layer (not the suite) is what fails.
"""
from __future__ import annotations

import base64
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from assignment.spec import SPEC, Spec
from autograder.samples import write_submission
from grader.paths import REFERENCE_DIR, REPO

STRATEGIES = ("random", "zeros", "ones", "pattern", "meta", "memo", "other-inputs", "lookup")
FLOOR = 3.0
CONTROL = "adversary-control"
RUNTIME = pathlib.Path(__file__).parent / "runtime" / "adversary.py"


@dataclass(frozen=True)
class Generated:
    name: str           # its folder name, also its name in the gradebook
    kind: str           # "adversary", "style" or "mutant"
    what: str           # one line: what it is


def _layer(module: str, spec: Spec) -> str:
    """The text of student/<module>.py: the reference's names, the graded ones answering as the adversary."""
    lines = [f'"""Generated adversary: the reference\'s {module}.py, every graded answer faked (see _adversary.py)."""',
             f"from student._reference.{module} import *  # noqa: F403 (the given code, as the reference has it)",
             f"from student._reference import {module} as _reference",
             "from student._adversary import corrupt, corrupt_method", ""]
    methods = []
    for part in spec.parts:
        if part.module != module:
            continue
        for name in part.names:
            if "." not in name:
                lines.append(f"{name} = corrupt({name!r}, _reference.{name})")
            elif not name.endswith(".__init__"):
                methods.append(name)
    if methods:
        cls = spec.module_class
        lines += ["", "", f"class {cls}(_reference.{cls}):"]
        lines += [f"    {name.split('.', 1)[1]} = corrupt_method({name!r}, _reference.{name})" for name in methods]
    elif spec.exports.get(spec.module_class) == module:
        lines.append(f"{spec.module_class} = _reference.{spec.module_class}")
    return "\n".join(lines) + "\n"


def harvest_table(work: pathlib.Path) -> bytes:
    """The lookup adversary's table (harvest.py), recorded in a child process from a reference submission."""
    folder = write_submission(work / "harvest")
    table = work / "table.pt"
    proc = subprocess.run([sys.executable, "-m", "autograder.adequacy.harvest", str(table)], cwd=folder,
                          env={**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"},
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 or not table.is_file():
        raise RuntimeError(f"recording the handout's calls failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}"
                           f"{proc.stderr[-2000:]}")
    return table.read_bytes()


def write_one(dest: pathlib.Path, strategy: str, table: bytes = b"", spec: Spec = SPEC) -> pathlib.Path:
    write_submission(dest)
    package = dest / "student"
    private = package / "_reference"
    private.mkdir()
    (private / "__init__.py").write_text('"""The reference, privately: the adversary runs it for the shapes."""\n')
    for path in sorted(REFERENCE_DIR.glob("*.py")):
        shutil.copyfile(path, private / path.name)
    runtime = RUNTIME.read_text().replace("@STRATEGY@", strategy)
    runtime = runtime.replace("@TABLE@", base64.b64encode(table).decode() if strategy == "lookup" else "")
    (package / "_adversary.py").write_text(runtime)
    for module in spec.modules:
        (package / f"{module}.py").write_text(_layer(module, spec))
    return dest


def write(folder: pathlib.Path, strategies=STRATEGIES) -> list[Generated]:
    """The adversaries of `strategies`, and the control, written under folder."""
    folder = pathlib.Path(folder)
    with tempfile.TemporaryDirectory(prefix="harvest-") as work:
        table = harvest_table(pathlib.Path(work)) if "lookup" in strategies else b""
    found = [Generated(CONTROL, "control", "the adversaries' layer answering right (must score full marks)")]
    write_one(folder / CONTROL, "control")
    for strategy in strategies:
        name = f"adversary-{strategy}"
        write_one(folder / name, strategy, table)
        found.append(Generated(name, "adversary", f"computes nothing: {strategy}"))
    return found
