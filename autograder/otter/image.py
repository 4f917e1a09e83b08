"""Gradescope's grading image for autograder.zip: setup.sh, run_autograder and the image's requirements.txt.

    requirements(files, pins)   the pins of exactly the third-party packages the shipped files import
    setup_sh(modules)           builds the image once: Python 3.11 from Ubuntu's archive, a venv, the pins
    run_autograder()            grades each submission: grader.gradescope.run_autograder with that venv

Otter's template installs Miniforge, a conda environment, otter-grader with Jupyter and pandas,
Playwright with Chromium, and R build tools, because otter grades notebooks in a kernel. This grader
runs no notebook and no otter on Gradescope, so the image gets only what grading imports (read from the
shipped files: a new import fails the build until it is pinned here) and Python 3.11, from the
python3.11 package of Gradescope's Ubuntu 22.04 base image (no download outside Ubuntu's archive and the
package index). PyTorch is the CPU build from PyTorch's index: the default Linux wheel is the CUDA one.
"""
from __future__ import annotations

import re

from autograder.otter import closure

# Where setup.sh puts the grader's Python; run_autograder uses it unless AUTOGRADER_PYTHON names another
# (the harness emulation points it at the current interpreter: autograder.otter.harness).
VENV = "/opt/attention-grader"
PYTHON_OVERRIDE = "AUTOGRADER_PYTHON"
PYTHON_VERSION = "3.11"
APT_PACKAGES = (f"python{PYTHON_VERSION}", f"python{PYTHON_VERSION}-venv")
CPU_INDEX = "--extra-index-url=https://download.pytorch.org/whl/cpu"
# The import name of each third-party package the grader may import -> its name in requirements.txt.
# What the image may install: the runtime's third-party imports. The class reports (Pillow, copydetect) and the
# reading of Gradescope exports (PyYAML) are the instructor's (autograder/, never shipped): a shipped module
# importing one is refused by the build.
DISTRIBUTIONS = {module: closure.DISTRIBUTIONS[module] for module in ("torch", "numpy", "pytest")}
# Needed though no shipped file imports it: torch's NumPy bridge (torch warns on import without it).
ALSO_NEEDED = ("numpy",)
# Shipped, but run only by `otter run` on an instructor's machine (which has otter), never in the image.
OTTER_RUN_ONLY = ("grader/gradescope/plugin.py",)


class ImageError(RuntimeError):
    """The image cannot be specified; the message says what to pin or map."""


def requirement_name(line: str) -> str:
    return re.split(r"[=<>!~\[ ;]", line.strip(), maxsplit=1)[0].lower()


def needed_modules(imports: dict[str, list[str]]) -> list[str]:
    """The third-party modules the image must provide, from {module: [importing files]} (OTTER_RUN_ONLY left
    out)."""
    needed = {module for module, files in imports.items() if set(files) - set(OTTER_RUN_ONLY)}
    unknown = sorted(needed - set(DISTRIBUTIONS))
    if unknown:
        where = "; ".join(f"{m} (in {', '.join(imports[m])})" for m in unknown)
        raise ImageError(f"the grader imports {where}: pin it in requirements.txt and map it in "
                         "autograder/otter/image.py DISTRIBUTIONS")
    return sorted(needed | set(ALSO_NEEDED))


def requirements(modules: list[str], pins: list[str]) -> str:
    """The image's requirements.txt: the CPU index, then the repository's pin of each needed package
    (torch as its +cpu build)."""
    return requirements_for(sorted({DISTRIBUTIONS[m] for m in modules}), pins, cpu_torch=True)


def requirements_for(distributions: list[str], pins: list[str], *, cpu_torch: bool) -> str:
    """A requirements.txt of these distributions: the CPU index, then the repository's exact pin of each
    (torch as its +cpu build when cpu_torch; else the plain pin, which the CPU index satisfies on Linux and
    PyPI everywhere else)."""
    by_name = {requirement_name(line): line.strip() for line in pins}
    lines = [CPU_INDEX]
    for name in sorted({d.lower() for d in distributions}):
        pin = by_name.get(name)
        if pin is None or "==" not in pin:
            raise ImageError(f"requirements.txt pins no exact version of {name}, which is imported")
        if name == "torch" and cpu_torch:
            pin = f"torch=={pin.split('==', 1)[1].split('+')[0]}+cpu"
        lines.append(pin)
    return "\n".join(lines) + "\n"


def setup_sh(modules: list[str]) -> str:
    imports = ", ".join(modules)
    return f"""#!/usr/bin/env bash
# Gradescope runs this once, as root, to build the grading image (base: Ubuntu 22.04).
# It installs Python {PYTHON_VERSION} from Ubuntu's archive and, in a virtual environment of its own,
# exactly the pins of requirements.txt (PyTorch's CPU build). Nothing else: grading runs no notebook,
# no browser, no R and no conda (see autograder/otter/image.py).
set -euo pipefail
source_dir="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"

export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends {' '.join(APT_PACKAGES)}

python{PYTHON_VERSION} -m venv {VENV}
{VENV}/bin/python -m pip install --no-cache-dir --disable-pip-version-check -r "$source_dir/requirements.txt"

# A broken image fails here, at build time, instead of in every student's grading.
{VENV}/bin/python -c "import {imports}"
"""


def run_autograder() -> str:
    return f"""#!/usr/bin/env bash
# Gradescope copies this to /autograder/run_autograder and runs it for every submission. It grades
# /autograder/submission with the engine and hidden suite in /autograder/source and writes
# /autograder/results/results.json. The layout's root is the folder holding this script, so a copy of
# the layout elsewhere (autograder/otter/harness.py) is graded the same way; {PYTHON_OVERRIDE} names
# another Python than the image's (the one setup.sh made).
set -euo pipefail
root="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
# Started from inside source/ rather than from the copy Gradescope makes: the root is one level up.
if [[ ! -d "$root/source" && -f "$root/otter_config.json" ]]; then root="$(dirname "$root")"; fi
cd "$root/source"
exec "${{{PYTHON_OVERRIDE}:-{VENV}/bin/python}}" -s -m grader.gradescope.run_autograder "$root"
"""
