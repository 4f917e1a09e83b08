"""Every call of a graded function the handout shows, with the reference's answer: the lookup adversary's table.

    python -m autograder.adequacy.harvest TABLE      (run from a folder holding the reference as student/)

Runs, against the reference, what a student has and can read answers from: the public checks
(student/tests) and the teaching cells of the master notebook up to its last check (the epilogue's
training aside). Each graded call made there (the outermost one: not the ones the reference makes on
the way) is recorded with its arguments, the module's weights and configuration for a method, and the
result, and the list is saved with torch.save to TABLE. adversaries.py runs this in a child process,
so nothing it imports or patches stays behind.
"""
from __future__ import annotations

import contextlib
import functools
import io
import os
import sys

import nbformat
import pytest
import torch

from assignment.spec import SPEC
from autograder.adequacy.runtime.adversary import module_state
from autograder.otter.packaging import MASTER_NOTEBOOK

_PLAIN = (int, float, bool, str, type(None))
_INSIDE: list = []


def _kept(value):
    """value as the table keeps it: tensors detached on the CPU, containers of those, plain values."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu").clone() if value.device.type != "meta" else repr(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_kept(item) for item in value)
    if isinstance(value, dict):
        return {str(key): _kept(item) for key, item in value.items()}
    return value if isinstance(value, _PLAIN) else repr(value)


def _recording(name, function, table, method: bool):
    @functools.wraps(function)
    def recorder(*args, **kwargs):
        if _INSIDE:
            return function(*args, **kwargs)
        _INSIDE.append(name)
        try:
            result = function(*args, **kwargs)
        finally:
            _INSIDE.pop()
        state, plain_args = (module_state(args[0]), args[1:]) if method else (None, args)
        table.append({"name": name, "args": _kept(list(plain_args)), "kwargs": _kept(kwargs), "state": state,
                      "result": _kept(result)})
        return result
    return recorder


def install(table: list) -> None:
    """Record every graded call of the student package importable from here."""
    import importlib

    student = importlib.import_module("student")
    for name, module_name in SPEC.exports.items():
        module = importlib.import_module(f"student.{module_name}")
        if name in SPEC.functions:
            recorder = _recording(name, getattr(module, name), table, method=False)
            setattr(module, name, recorder)
            student.__dict__[name] = recorder
    cls = getattr(importlib.import_module(f"student.{SPEC.exports[SPEC.module_class]}"), SPEC.module_class)
    for qualname in (n for part in SPEC.parts for n in part.names if n.startswith(SPEC.module_class + ".")):
        method = qualname.split(".", 1)[1]
        if method != "__init__":
            setattr(cls, method, _recording(qualname, getattr(cls, method), table, method=True))


def notebook_cells() -> list[str]:
    """The master notebook's code up to its last `check(N)` cell, without the checks and IPython magics."""
    cells = [cell.source for cell in nbformat.read(MASTER_NOTEBOOK, as_version=4).cells if cell.cell_type == "code"]
    last = max(i for i, source in enumerate(cells) if source.strip().startswith("check("))
    return ["\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
            for source in cells[:last] if not source.strip().startswith("check(")]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    table: list = []
    sys.path.insert(0, os.getcwd())
    os.environ.setdefault("MPLBACKEND", "Agg")
    install(table)
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "student/tests"])
        namespace: dict = {"__name__": "__notebook__"}
        for source in notebook_cells():
            exec(compile(source, "notebook", "exec"), namespace)
    torch.save(table, argv[0])
    print(f"{len(table)} calls recorded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
