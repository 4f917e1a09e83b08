"""What a score was graded on besides the suite: Python, torch, and in a GPU run CUDA, the driver and the GPU
model, in one line each row and results file keep (Row.environment), so a score can be reproduced and a changed
environment shows in changes.csv.

    describe(gpu_run) -> "python 3.11.9; torch 2.13.0+cpu" (a GPU run: "...; CUDA 12.8; driver 570.86.15;
                         GPU NVIDIA H200")

Read in the batch's own process, which never imports torch (the engine forks after it, and CUDA must never start
there): torch's version file is read as text, the driver's version and the GPU models from /proc.
"""
from __future__ import annotations

import ast
import functools
import importlib.util
import pathlib
import platform
import re

from grader.contain.gpu import DRIVER_PROC

PROC_NVIDIA = pathlib.Path("/", *DRIVER_PROC)   # the driver's own folder, as a box given a GPU reads it
DRIVER = re.compile(r"Kernel Module(?: for \S+)?\s+([0-9][0-9.]*)")


def torch_versions() -> dict[str, str]:
    """torch's __version__ and version.cuda, from torch/version.py as text (no import); {} where torch is absent."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return {}
    try:
        tree = ast.parse((pathlib.Path(next(iter(spec.submodule_search_locations))) / "version.py").read_text())
    except (OSError, SyntaxError, ValueError):
        return {}
    found = {}
    for node in tree.body:   # `__version__ = '2.13.0+cpu'`, `cuda: Optional[str] = '12.8'`
        value: ast.expr | None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and isinstance(value.value, str):
            found[target.id] = value.value
    return found


def nvidia(proc: pathlib.Path = PROC_NVIDIA) -> list[str]:
    """["driver 570.86.15", "GPU NVIDIA H200"] as the driver's /proc files say ([] where there are none)."""
    parts = []
    try:
        version = DRIVER.search((proc / "version").read_text())
    except OSError:
        version = None
    if version:
        parts.append(f"driver {version.group(1)}")
    models = set()
    for information in sorted(proc.glob("gpus/*/information")):
        try:
            model = re.search(r"^Model:\s*(.+?)\s*$", information.read_text(), re.MULTILINE)
        except OSError:
            continue
        if model:
            models.add(model.group(1))
    parts += [f"GPU {model}" for model in sorted(models)]
    return parts


@functools.cache
def describe(gpu_run: bool = False, proc: pathlib.Path = PROC_NVIDIA) -> str:
    torch = torch_versions()
    parts = [f"python {platform.python_version()}", f"torch {torch.get('__version__', 'absent')}"]
    if gpu_run:
        parts += [f"CUDA {torch.get('cuda') or 'none'}", *nvidia(proc)]
    return "; ".join(parts)
