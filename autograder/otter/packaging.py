"""Assemble what instructors hand out and upload: the student notebook, the handout zip, autograder.zip.

    student_notebook(master, dest)          otter assign -> the student version of the master notebook
    build_handout(zip_path, notebook)       student/ (stubs, public checks) + notebook + requirements
    build_autograder_zip(zip_path)          otter generate + our plugin, engine and hidden suite

The handout is assembled from an allow-list of what students need, and the stubs must be exactly
those generated from the reference, so a solution accidentally saved into student/ never ships.
"""
from __future__ import annotations

import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

from autograder.otter import closure
from autograder.paths import REPO, STUDENT_DIR
from autograder.stubs import GRADED_MODULES, generated_stubs
from grading_tests.scoring import PART_POINTS

MASTER_NOTEBOOK = REPO / "assignment" / "notebook" / "attention.ipynb"
NOTEBOOK_NAME = MASTER_NOTEBOOK.name
REQUIREMENTS = REPO / "requirements.txt"
# PyTorch's CPU wheels; without this index pip on Linux installs the multi-GB CUDA build.
CPU_INDEX = "--extra-index-url=https://download.pytorch.org/whl/cpu"
PYTHON_VERSION = "3.11"
PLUGIN = "autograder.otter.plugin.EngineGradingPlugin"   # the name otter imports (see plugin.py)

# What of the repository goes into autograder.zip, next to otter's run_otter.py (on sys.path there).
AUTOGRADER_SOURCES = ("autograder/__init__.py", "autograder/__main__.py", "autograder/paths.py",
                      "autograder/otter/__init__.py", "autograder/otter/plugin.py", "autograder/otter/engine_bridge.py",
                      "grading_tests")
ENGINE_SOURCES = ("autograder/grade_cli.py", "autograder/engine")
OUR_PACKAGES = ("autograder", "grading_tests", "student")
BYTECODE = ("__pycache__", "*.pyc")
# The student package in the handout: everything in student/ except bytecode.
HANDOUT_PACKAGE_SKIP = (*BYTECODE, ".pytest_cache", ".hypothesis")

# What the handout carries beside student/ and the notebook: its README and the (ungraded) benchmark.
HANDOUT_DIR = REPO / "handout"
STUDENT_README = (HANDOUT_DIR / "README.md").read_text()
HANDOUT_EXTRAS = ("bench.py",)


def placeholder_notebook() -> str:
    """Stands in for the student's notebook inside autograder.zip (see build_autograder_zip)."""
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("Only student/ is graded.")])
    notebook.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return nbformat.writes(notebook)


class BuildError(RuntimeError):
    """The build cannot produce a correct artefact; the message says what to fix."""


def _pinned_requirements() -> list[str]:
    return [line.strip() for line in REQUIREMENTS.read_text().splitlines()
            if line.strip() and not line.strip().startswith("#")]


def _package_name(line: str) -> str:
    return re.split(r"[=<>\[ ]", line, maxsplit=1)[0].lower()


# Developer tools: students neither run nor need them.
NOT_FOR_STUDENTS = {"ruff"}


def student_requirements() -> str:
    """The repository's pins, with the CPU index first (the `+cpu` wheel wins on Linux)."""
    lines = [line for line in _pinned_requirements()
             if line != CPU_INDEX and _package_name(line) not in NOT_FOR_STUDENTS]
    return "\n".join([CPU_INDEX, *lines]) + "\n"


# Not needed to grade: otter itself is added by otter generate; JupyterLab is for students, ruff for developers.
NOT_FOR_GRADING = {"otter-grader", "jupyterlab", "ruff"}


def autograder_requirements() -> str:
    """Pins for Gradescope's image: CPU torch exactly, nothing grading does not need."""
    out = [CPU_INDEX]
    for line in _pinned_requirements():
        name = _package_name(line)
        if line == CPU_INDEX or name in NOT_FOR_GRADING:
            continue
        if name == "torch":
            version = line.split("==", 1)[1]
            line = f"torch=={version.split('+')[0]}+cpu"
        out.append(line)
    return "\n".join(out) + "\n"


def student_notebook(master: pathlib.Path, dest: pathlib.Path) -> pathlib.Path:
    """Run otter assign on the master notebook; copy the student version to dest."""
    with tempfile.TemporaryDirectory(prefix="otter-assign-") as scratch:
        out = pathlib.Path(scratch) / "assign"
        proc = subprocess.run([sys.executable, "-m", "otter", "assign", str(master), str(out)],
                              capture_output=True, text=True, cwd=scratch)
        produced = out / "student" / master.name
        if proc.returncode != 0 or not produced.is_file():
            raise BuildError(f"otter assign failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(produced, dest)
    return dest


def check_stubs_are_generated() -> None:
    for name, text in generated_stubs().items():
        if (STUDENT_DIR / name).read_text() != text:
            raise BuildError(f"student/{name} is not the generated stub (a solution in the handout?): "
                             "run `python -m autograder.stubs`")


def tree_files(folder: pathlib.Path, skip=()) -> list[pathlib.Path]:
    """The files under folder (sorted), leaving out any whose path has a part matching a skip pattern."""
    return [path for path in sorted(folder.rglob("*")) if path.is_file()
            and not any(part_matches(part, skip) for part in path.relative_to(folder).parts)]


def _write_tree(zf: zipfile.ZipFile, folder: pathlib.Path, arcroot: str, skip=()) -> None:
    for path in tree_files(folder, skip):
        zf.write(path, f"{arcroot}/{path.relative_to(folder).as_posix()}")


def part_matches(name: str, patterns) -> bool:
    return any(pathlib.PurePath(name).match(pattern) for pattern in patterns)


def build_handout(zip_path: pathlib.Path, notebook: pathlib.Path) -> pathlib.Path:
    """The student handout: student/ package, the student notebook, requirements.txt, README.md, bench.py."""
    check_stubs_are_generated()
    assert set(GRADED_MODULES) <= {p.name for p in STUDENT_DIR.glob("*.py")}
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
        _write_tree(zf, STUDENT_DIR, "student", skip=HANDOUT_PACKAGE_SKIP)
        zf.write(notebook, NOTEBOOK_NAME)
        zf.writestr("requirements.txt", student_requirements())
        zf.writestr("README.md", STUDENT_README)
        for name in HANDOUT_EXTRAS:
            zf.write(HANDOUT_DIR / name, name)
    return zip_path


def otter_config() -> dict:
    return {
        "lang": "python",
        "plugins": [PLUGIN],
        # Grading never reads the student's log or notebook outputs (the plugin enforces this too).
        "grade_from_log": False,
        "zips": False,
        # Otter's summary lists otter's own (empty) tests; the plugin's report prints the engine's parts.
        "print_summary": False,
        "points_possible": sum(PART_POINTS.values()),
    }


def shipped_files() -> list[str]:
    """Every repository file autograder.zip carries (posix paths); raises BuildError when one is
    missing or when a shipped module imports one of ours that is not shipped."""
    missing = [source for source in AUTOGRADER_SOURCES + ENGINE_SOURCES if not (REPO / source).exists()]
    if missing:
        raise BuildError(f"cannot build autograder.zip: missing {', '.join(missing)}")
    files = []
    for source in AUTOGRADER_SOURCES + ENGINE_SOURCES:
        path = REPO / source
        if path.is_dir():
            files += [p.relative_to(REPO).as_posix() for p in tree_files(path, BYTECODE)]
        else:
            files.append(source)
    unresolved = closure.missing_imports(REPO, files, OUR_PACKAGES)
    if unresolved:
        raise BuildError("autograder.zip would lack modules the grader imports:\n  " + "\n  ".join(unresolved))
    return files


def build_autograder_zip(zip_path: pathlib.Path) -> pathlib.Path:
    """Gradescope's autograder.zip: otter's set-up files, our otter_config with the plugin, the
    pinned CPU requirements, and (at the top, importable) our engine, plugin and hidden suite."""
    from otter.generate import main as otter_generate

    files = shipped_files()
    zip_path = zip_path.resolve()
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="otter-generate-") as scratch:
        scratch = pathlib.Path(scratch)
        (scratch / "tests").mkdir()
        (scratch / "otter_config.json").write_text(json.dumps(otter_config(), indent=2))
        (scratch / "requirements.txt").write_text(autograder_requirements())
        otter_generate(tests_dir=str(scratch / "tests"), output_path=str(zip_path),
                       config=str(scratch / "otter_config.json"), requirements=str(scratch / "requirements.txt"),
                       no_environment=True, python_version=PYTHON_VERSION)
    with zipfile.ZipFile(zip_path, "a", zipfile.ZIP_DEFLATED) as zf:
        # Otter copies source/tests into the submission folder and fails when it is absent.
        zf.writestr("tests/README.md", "Otter's own tests are not used: autograder.otter.plugin grades.\n")
        # Otter copies source/files/* over the submission: it needs exactly one notebook to start,
        # whatever the student zipped (only student/, a nested folder, a broken notebook).
        zf.writestr(f"files/{NOTEBOOK_NAME}", placeholder_notebook())
        for name in files:
            zf.write(REPO / name, name)
    return zip_path
