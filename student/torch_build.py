"""Which PyTorch is installed, in plain words, and what to do when it is not the small CPU build.

`python -m student.check` prints this first. Every build is correct: a CUDA (or ROCm) build runs on a CPU just
the same, it only takes gigabytes where the CPU build that requirements.txt asks for takes a fraction of that.
pip installs the CUDA build where it cannot reach PyTorch's CPU index (some networks block it): it warns for every
package, then takes PyPI's PyTorch, which on Linux is the CUDA build.
"""
import re
from importlib import metadata

CPU_INDEX = "https://download.pytorch.org/whl/cpu"   # PyTorch's index of CPU builds: requirements.txt's first line


def describe() -> str:
    """The installed PyTorch and, unless it is the CPU build, how to switch to that one."""
    try:
        import torch
    except ImportError as error:
        return f"PyTorch cannot be imported ({error}): run `pip install -r requirements.txt` in this folder first."
    return describe_build(torch.__version__, torch.version.cuda, getattr(torch.version, "hip", None))


def describe_build(version: str, cuda: str | None, hip: str | None) -> str:
    """version: torch.__version__; cuda, hip: torch.version.cuda and torch.version.hip (None in the CPU build)."""
    if cuda is None and hip is None:
        return f"PyTorch {version}, the CPU build."
    lines = [f"PyTorch {version}, the {f'CUDA {cuda}' if cuda else f'ROCm {hip}'} build. It works, on a CPU too, but "
             "takes gigabytes with its GPU libraries:",
             "requirements.txt asks for the small CPU build; pip installs this one where it cannot reach "
             "download.pytorch.org.",
             "Nothing needs to change. To switch to the CPU build anyway, from a network that reaches that site:",
             f"    pip install --force-reinstall --no-deps --index-url {CPU_INDEX} torch=={version.split('+')[0]}+cpu"]
    libraries = gpu_libraries()
    if libraries:
        lines += ["then, to free the space its GPU libraries take:", f"    pip uninstall -y {' '.join(libraries)}"]
    return "\n".join(lines)


def gpu_libraries() -> list[str]:
    """The GPU libraries the installed PyTorch requires (nvidia-* and triton): what pip installed with it."""
    try:
        required = metadata.requires("torch") or []
    except metadata.PackageNotFoundError:
        return []
    names = {re.match(r"[A-Za-z0-9._-]+", line).group() for line in required}
    return sorted(name for name in names if name.lower().startswith("nvidia-") or name.lower() == "triton")
