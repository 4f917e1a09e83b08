"""Gradescope's image is lean: the shipped setup.sh installs Python 3.11 and the shipped requirements, nothing
else (otter's own template fails the same check), and the requirements pin exactly the third-party packages
the shipped grader imports, with PyTorch's CPU build. Fast: autograder.zip without the notebook steps."""
import ast
import re
import shlex
import sys
import zipfile

import pytest

from autograder.otter import image, packaging
from grader.paths import REPO

TORCH_PIN = re.search(r"^torch==([\w.]+)$", (REPO / "requirements.txt").read_text(), re.M).group(1)
APT_ALLOWED = {"python3.11", "python3.11-venv"}
# What grading never needs; each was in otter's image (or the repository's requirements).
FORBIDDEN = re.compile(r"\b(wget|curl|mamba|conda|miniforge|playwright|chromium|texlive|pandoc|r-base|jupyter\w*|"
                       r"otter-grader|nbformat|nbclient|nbconvert|ipykernel|pandas|dill|ruff)\b", re.I)
VENV = re.escape(image.VENV)
# The only commands setup.sh may run, whole lines (the apt packages and imports are checked after).
COMMANDS = [
    r"set -euo pipefail",
    r'source_dir="\$\(cd "\$\(dirname "\$\{BASH_SOURCE\[0\]\}"\)" && pwd\)"',
    r"export DEBIAN_FRONTEND=noninteractive",
    r"apt-get update",
    r"apt-get install -y --no-install-recommends (?P<apt>[\w.+\- ]+)",
    rf"python3\.11 -m venv {VENV}",
    rf'{VENV}/bin/python -m pip install --no-cache-dir --disable-pip-version-check -r "\$source_dir/requirements\.txt"',
    rf'{VENV}/bin/python -c "import (?P<imports>[\w, ]+)"',
]


def setup_problems(script: str) -> list[str]:
    """Why a setup.sh installs more than Python 3.11 and requirements.txt (empty: it does not)."""
    lines = [line.strip() for line in script.replace("\\\n", " ").splitlines()]
    commands = [line for line in lines if line and not line.startswith("#")]
    found = [f"mentions {m.group(0)!r}" for line in commands for m in FORBIDDEN.finditer(line)]
    for line in commands:
        match = next((m for m in (re.fullmatch(c, line) for c in COMMANDS) if m), None)
        if match is None:
            found.append(f"runs {line!r}")
        elif match.groupdict().get("apt") and set(shlex.split(match["apt"])) - APT_ALLOWED:
            found.append(f"apt-get installs {sorted(set(shlex.split(match['apt'])) - APT_ALLOWED)}")
    return found


def imported_distributions(zf: zipfile.ZipFile) -> set[str]:
    """Requirement names (lower case) of what the grader shipped in the zip imports, read from the zip."""
    modules = set()
    for name in zf.namelist():
        if name.endswith(".py") and name not in image.OTTER_RUN_ONLY:
            for node in ast.walk(ast.parse(zf.read(name))):
                if isinstance(node, ast.Import):
                    modules |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules.add(node.module.split(".")[0])
    third_party = modules - set(sys.stdlib_module_names) - set(packaging.OUR_PACKAGES)
    return {image.DISTRIBUTIONS[m].lower() for m in third_party | set(image.ALSO_NEEDED)}


def requirement_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith(("#", "--"))]


def unneeded_requirements(zf: zipfile.ZipFile, requirements: str) -> list[str]:
    needed = imported_distributions(zf)
    return [line for line in requirement_lines(requirements) if image.requirement_name(line) not in needed]


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    path = packaging.build_autograder_zip(tmp_path_factory.mktemp("zip") / "autograder.zip")
    with zipfile.ZipFile(path) as zf:
        yield zf


def test_setup_sh_installs_python_311_and_the_requirements_only(shipped):
    script = shipped.read("setup.sh").decode()
    assert setup_problems(script) == []
    assert 'apt-get install -y --no-install-recommends python3.11 python3.11-venv' in script


def test_the_setup_check_rejects_otters_own_template():
    """The check is not vacuous: otter's setup.sh (Miniforge, Playwright, Chromium) fails it."""
    from otter.generate import JINJA_ENV

    otters = JINJA_ENV.get_template("python/setup.sh").render(
        autograder_dir="/autograder", otter_env_name="otter-env", miniforge_version="25.3.1-0")
    found = setup_problems(otters)
    for culprit in ("wget", "mamba", "playwright", "chromium", "build-essential"):
        assert any(culprit in problem for problem in found), (culprit, found)
    planted = setup_problems("apt-get install -y --no-install-recommends python3.11 r-base-core\n")
    assert planted == ["mentions 'r-base'", "apt-get installs ['r-base-core']"]


def test_the_image_requirements_are_what_the_grader_imports_with_cpu_torch(shipped):
    requirements = shipped.read("requirements.txt").decode()
    assert requirements.splitlines()[0] == image.CPU_INDEX
    assert unneeded_requirements(shipped, requirements) == []
    names = {image.requirement_name(line) for line in requirement_lines(requirements)}
    assert names == imported_distributions(shipped)
    assert f"torch=={TORCH_PIN}+cpu" in requirements.splitlines()
    assert not FORBIDDEN.search(requirements) and not re.search(r"cuda|cu1\d\d", requirements, re.I)
    repository_pins = set((REPO / "requirements.txt").read_text().splitlines())
    assert all(line in repository_pins for line in requirement_lines(requirements) if not line.startswith("torch"))


def test_the_requirements_check_catches_a_package_grading_does_not_import(shipped):
    requirements = shipped.read("requirements.txt").decode() + "nbformat==5.11.1\notter-grader[grading]==7.0.0\n"
    assert unneeded_requirements(shipped, requirements) == ["nbformat==5.11.1", "otter-grader[grading]==7.0.0"]


def test_a_new_import_fails_the_build_until_it_is_pinned():
    with pytest.raises(image.ImageError, match=r"pandas \(in grader/run/x\.py\)"):
        image.needed_modules({"torch": ["grading_tests/oracle.py"], "pandas": ["grader/run/x.py"]})
    assert image.needed_modules({"otter": list(image.OTTER_RUN_ONLY)}) == list(image.ALSO_NEEDED)
    with pytest.raises(image.ImageError, match="pins no exact version of torch"):
        image.requirements(["torch"], ["torch>=2"])


def test_run_autograder_starts_the_gradescope_runner_with_the_image_python(shipped):
    script = shipped.read("run_autograder").decode()
    assert script.startswith("#!/usr/bin/env bash\n")
    assert f"${{{image.PYTHON_OVERRIDE}:-{image.VENV}/bin/python}}" in script
    assert "-m grader.gradescope.run_autograder" in script and not FORBIDDEN.search(script)
    for name in ("setup.sh", "run_autograder"):
        assert (shipped.getinfo(name).external_attr >> 16) & 0o111 == 0o111, f"{name} is not executable"
