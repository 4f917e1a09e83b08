"""Assemble what instructors hand out and upload: the student notebook, the handout zip, autograder.zip.

    student_notebook(master, dest, spec)    otter assign -> the student version of the master notebook
                                            (the spec's parts only; no Otter question with its own tests)
    build_handout(zip_path, notebook, spec) student/ (stubs, the public checks of the spec's parts) + notebook
                                            + README + bench.py + requirements.txt (what the handout imports)
    build_autograder_zip(zip_path, spec)    grader/ (the runtime), hidden suite, the resolved spec, otter_config.json,
                                            setup.sh and run_autograder for Gradescope's image (image.py)

The handout is assembled from an allow-list of what students need, and every file the spec derives
(the stubs among them) must be exactly what `python -m autograder generate` writes, so a solution
accidentally saved into student/ never ships.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import pathlib
import py_compile
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

from assignment.spec import SPEC, Spec
from autograder import derived
from autograder.otter import closure, config, image, master
from grader.paths import MASTER_NOTEBOOK, REPO, STUDENT_DIR

NOTEBOOK_NAME = MASTER_NOTEBOOK.name
REQUIREMENTS = REPO / "requirements.txt"
PYPI_REQUIREMENTS = "requirements-pypi.txt"   # the handout's fallback where PyTorch's CPU index is out of reach
# PyTorch's CPU wheels; without this index pip on Linux installs the multi-GB CUDA build.
CPU_INDEX = image.CPU_INDEX

# What of the repository goes into autograder.zip, at its top (the working folder of run_autograder): the runtime
# package whole (grader/, which never imports these tools: an import-linter contract), the hidden suite, the spec's
# module, and the handout's package file, which a flat upload of the graded modules is graded with. Nothing is
# listed module by module: what grader/ holds ships.
# The runtime, the hidden suite, the spec, the handout's package file (for uploads without it) and the handout's
# public checks with the table of parts they import (Gradescope runs them on each upload: grader/run/public_checks.py).
SHIPPED_SOURCES = ("grader", "grading_tests", "assignment/spec.py", "assignment/spec_error.py", "student/__init__.py",
                   "student/parts.py", "student/tests")
SPEC_NAME = "assignment/assignment.toml"   # written into autograder.zip from the resolved spec
OUR_PACKAGES = ("assignment", "autograder", "grader", "grading_tests", "student")
BYTECODE = ("__pycache__", "*.pyc")
# The student package in the handout: everything in student/ except bytecode.
HANDOUT_PACKAGE_SKIP = (*BYTECODE, ".pytest_cache", ".hypothesis")

# What the handout carries beside student/ and the notebook: its README and the (ungraded) benchmark.
HANDOUT_DIR = REPO / "handout"
HANDOUT_EXTRAS = ("README.md", "bench.py")
# The public checks of one part: student/tests/test_part<N>_<topic>.py (left out with their part).
PUBLIC_CHECKS = re.compile(r"tests/test_part(\d+)_\w+\.py")
# What a student needs beyond what the handout imports: Jupyter, to open the notebook.
STUDENT_TOOLS = ("jupyterlab",)


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


def student_requirements(files: dict[str, pathlib.Path]) -> str:
    """The handout's requirements.txt: the pins of exactly what its files import (and Jupyter), the CPU
    index first (the `+cpu` wheel wins on Linux)."""
    with tempfile.TemporaryDirectory(prefix="handout-imports-") as scratch:
        for name, path in files.items():
            (pathlib.Path(scratch) / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, pathlib.Path(scratch) / name)
        imports = closure.third_party_imports(pathlib.Path(scratch), list(files), ("student",))
    unknown = sorted(set(imports) - set(closure.DISTRIBUTIONS))
    if unknown:
        where = "; ".join(f"{m} (in {', '.join(imports[m])})" for m in unknown)
        raise BuildError(f"the handout imports {where}: pin it in requirements.txt and map it in "
                         "autograder/otter/closure.py DISTRIBUTIONS")
    distributions = {closure.DISTRIBUTIONS[m] for m in imports} | {closure.DISTRIBUTIONS[m] for m in image.ALSO_NEEDED}
    try:
        return image.requirements_for(sorted(distributions | set(STUDENT_TOOLS)), _pinned_requirements(),
                                      cpu_torch=False)
    except image.ImageError as error:
        raise BuildError(str(error)) from None


def check_master(text: str) -> None:
    """Refuse an Otter question with tests of its own: only student/ is graded, by grading_tests/."""
    questions = master.questions_with_tests(text)
    if questions:
        raise BuildError(f"{MASTER_NOTEBOOK.relative_to(REPO)}: the Otter question(s) {', '.join(questions)} have "
                         f"tests of their own (# BEGIN TESTS cells). Only the student/ package is graded, by "
                         f"grading_tests/: move each test into grading_tests/test_part<N>_*.py (a test of Part N) "
                         f"and delete the # BEGIN TESTS ... # END TESTS cells, or the handout would ship a "
                         f"grader.check cell that fails and points that are never graded")
    scored = master.questions_with_points(text)
    if scored:
        raise BuildError(f"{MASTER_NOTEBOOK.relative_to(REPO)}: the Otter question(s) {'; '.join(scored)} carry "
                         f"points, which nothing grades: the hidden suite grades student/, and the parts of "
                         f"assignment/assignment.toml are the whole grade. Set `points: 0` to keep a question "
                         f"ungraded, or give its points to a part")


def student_notebook(master_path: pathlib.Path, dest: pathlib.Path, spec: Spec = SPEC) -> pathlib.Path:
    """Run otter assign on the master notebook (the spec's parts only); copy the student version to dest.

    otter assign takes seconds (most of them importing otter); its output is a function of the notebook it is
    given and of otter's version, so it is kept in a cache keyed by both (ASSIGN_CACHE) and reused."""
    text = master_path.read_text()
    check_master(text)
    chosen = master.for_spec(text, spec)
    cached = _assign_cache() / f"{hashlib.sha256((otter_version() + chosen).encode()).hexdigest()}.ipynb"
    dest.parent.mkdir(parents=True, exist_ok=True)
    if cached.is_file():
        shutil.copyfile(cached, dest)
        return dest
    with tempfile.TemporaryDirectory(prefix="otter-assign-") as scratch:
        notebook = pathlib.Path(scratch) / master_path.name
        notebook.write_text(chosen)
        out = pathlib.Path(scratch) / "assign"
        proc = subprocess.run([sys.executable, "-m", "otter", "assign", str(notebook), str(out)],
                              capture_output=True, text=True, cwd=scratch)
        produced = out / "student" / master_path.name
        if proc.returncode != 0 or not produced.is_file():
            raise BuildError(f"otter assign failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
        shutil.copyfile(produced, dest)
        with contextlib.suppress(OSError):   # a cache that cannot be written only costs the next build time
            cached.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(produced, cached.with_suffix(".tmp"))
            os.replace(cached.with_suffix(".tmp"), cached)
    return dest


ASSIGN_CACHE = "AUTOGRADER_ASSIGN_CACHE"   # where otter assign's results are kept (default: the user's cache)


def _assign_cache() -> pathlib.Path:
    if os.environ.get(ASSIGN_CACHE):
        return pathlib.Path(os.environ[ASSIGN_CACHE])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "attention-assignment" / "otter-assign"


def otter_version() -> str:
    from importlib.metadata import version

    return version("otter-grader")


def check_derived(spec: Spec = SPEC) -> None:
    """Every file the spec derives must be what `python -m autograder generate` writes (a solution saved
    into student/, a spec edited without regenerating)."""
    drifted = derived.stale(spec)
    if drifted:
        raise BuildError(derived.stale_message(drifted))


def tree_files(folder: pathlib.Path, skip=()) -> list[pathlib.Path]:
    """The files under folder (sorted), leaving out any whose path has a part matching a skip pattern."""
    return [path for path in sorted(folder.rglob("*")) if path.is_file()
            and not any(part_matches(part, skip) for part in path.relative_to(folder).parts)]


def _write_tree(zf: zipfile.ZipFile, folder: pathlib.Path, arcroot: str, skip=()) -> None:
    for path in tree_files(folder, skip):
        zf.write(path, f"{arcroot}/{path.relative_to(folder).as_posix()}")


def part_matches(name: str, patterns) -> bool:
    return any(pathlib.PurePath(name).match(pattern) for pattern in patterns)


def handout_files(notebook: pathlib.Path, spec: Spec = SPEC) -> dict[str, pathlib.Path]:
    """The handout's files (name in the zip -> file): student/ without bytecode and without the public checks
    of parts the spec does not declare, the student notebook, the README and the benchmark."""
    files = {}
    for path in tree_files(STUDENT_DIR, HANDOUT_PACKAGE_SKIP):
        relative = path.relative_to(STUDENT_DIR).as_posix()
        checks = PUBLIC_CHECKS.fullmatch(relative)
        if checks is None or int(checks.group(1)) in spec.numbers:
            files[f"student/{relative}"] = path
    files[NOTEBOOK_NAME] = notebook
    files.update({name: HANDOUT_DIR / name for name in HANDOUT_EXTRAS})
    return files


def build_handout(zip_path: pathlib.Path, notebook: pathlib.Path, spec: Spec = SPEC) -> pathlib.Path:
    """The student handout: student/ package, the student notebook, requirements.txt, README.md, bench.py."""
    check_derived(spec)
    files = handout_files(notebook, spec)
    requirements = student_requirements(files)
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, path in files.items():
            zf.write(path, name)
        _write(zf, "requirements.txt", requirements)
        _write(zf, PYPI_REQUIREMENTS, pypi_only(requirements))
    return zip_path


def pypi_only(requirements: str) -> str:
    """The same pins without PyTorch's CPU index: where a student's network cannot reach that index, pip would
    retry it for every package (11 minutes, seen), so the handout's README sends them to this file."""
    kept = [line for line in requirements.splitlines() if line != CPU_INDEX]
    return "\n".join(["# PyPI alone: torch from PyPI is the larger CUDA build on Linux, and works on a CPU too.",
                      *kept]) + "\n"


def shipped_files() -> list[str]:
    """Every repository file autograder.zip carries (posix paths); raises BuildError when one is
    missing or when a shipped module imports one of ours that is not shipped."""
    sources = SHIPPED_SOURCES
    missing = [source for source in sources if not (REPO / source).exists()]
    if missing:
        raise BuildError(f"cannot build autograder.zip: missing {', '.join(missing)}")
    files = []
    for source in sources:
        path = REPO / source
        if path.is_dir():
            files += [p.relative_to(REPO).as_posix() for p in tree_files(path, BYTECODE)]
        else:
            files.append(source)
    unresolved = closure.missing_imports(REPO, files, OUR_PACKAGES)
    if unresolved:
        raise BuildError("autograder.zip would lack modules the grader imports:\n  " + "\n  ".join(unresolved))
    return files


def _write(zf: zipfile.ZipFile, name: str, text: str, mode: int = 0o644) -> None:
    """A generated file, readable by everyone once unzipped (zipfile's writestr of a name alone gives 0600: a
    handout's requirements.txt its student could not share with a group, a runner another user could not read)."""
    _write_bytes(zf, name, text.encode(), mode)


def _write_bytes(zf: zipfile.ZipFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)


def build_autograder_zip(zip_path: pathlib.Path, otter_config_overrides: dict | None = None,
                         spec: Spec = SPEC) -> pathlib.Path:
    """Gradescope's autograder.zip: setup.sh and run_autograder (autograder.otter.image), the image's
    requirements, the spec with the instructor's otter_config overrides resolved (assignment/assignment.toml,
    what grading reads), otter_config.json (for `otter run`), and at the top, importable, the runtime (grader/:
    the engine, the Gradescope runner, the otter plugin) and the hidden suite."""
    files = shipped_files()
    try:
        spec, cosmetic = config.resolved(spec, otter_config_overrides)
        modules = image.needed_modules(closure.third_party_imports(REPO, files, OUR_PACKAGES))
        requirements = image.requirements(modules, _pinned_requirements())
    except (config.ConfigError, image.ImageError) as error:
        raise BuildError(str(error)) from None
    zip_path = zip_path.resolve()
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
        _write(zf, "setup.sh", image.setup_sh(modules), 0o755)
        _write(zf, "run_autograder", image.run_autograder(), 0o755)
        _write(zf, "requirements.txt", requirements)
        _write(zf, "otter_config.json", json.dumps(config.otter_config(spec, cosmetic), indent=2) + "\n")
        _write(zf, SPEC_NAME, spec.to_toml())
        # For `otter run` only: otter copies source/tests into the submission folder and fails when it
        # is absent, and it needs exactly one notebook in the submission to start, whatever the student
        # zipped (it copies source/files/* over the submission). Neither is graded.
        _write(zf, "tests/README.md", "Otter's own tests are not used: grader.gradescope.plugin grades.\n")
        _write(zf, f"files/{NOTEBOOK_NAME}", placeholder_notebook())
        for name in files:
            zf.write(REPO / name, name)
        _write_bytecode(zf, [name for name in files if name.endswith(".py")])
    return zip_path


def _write_bytecode(zf: zipfile.ZipFile, names: list[str]) -> None:
    """Each shipped module's bytecode beside it (__pycache__), for the Python 3.11 that grades: the engine runs with
    PYTHONDONTWRITEBYTECODE (it writes nothing into the unzipped source), so without these every process compiled what
    it imported, the trusted process of each submission the hidden suite again (an eighth of a submission's CPU).
    Checked-hash bytecode: valid whatever the unzipped files' times, and ignored for a source that differs from it
    (or by another Python, whose cache tag differs)."""
    with tempfile.TemporaryDirectory(prefix="autograder-bytecode-") as scratch:
        for name in names:
            compiled = py_compile.compile(str(REPO / name), cfile=os.path.join(scratch, "module.pyc"), dfile=name,
                                          doraise=True, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
            _write_bytes(zf, importlib.util.cache_from_source(name), pathlib.Path(compiled).read_bytes())
