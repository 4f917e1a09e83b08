"""python -m autograder build: the three artefacts in dist/, a handout without hidden material (and
planted material is caught), an autograder.zip that installs CPU torch and carries all the grader imports."""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

import nbformat
import pytest

from autograder import build_cli
from autograder.otter import closure, config, leaks, packaging
from autograder.samples import reference_source
from autograder.stubs import GRADED_MODULES, generated_stubs
from grader.paths import REPO
from tests.patience import SAFETY_NET_S

TORCH_PIN = re.search(r"^torch==([\w.]+)$", (REPO / "requirements.txt").read_text(), re.M).group(1)


def names(zip_path) -> list[str]:
    with zipfile.ZipFile(zip_path) as zf:
        return zf.namelist()


def read(zip_path, name) -> str:
    with zipfile.ZipFile(zip_path) as zf:
        return zf.read(name).decode()


def test_build_writes_the_student_notebook_through_otter_assign(dist):
    notebook = nbformat.read(dist / "attention.ipynb", as_version=4)
    nbformat.validate(notebook)
    assert not any("ASSIGNMENT CONFIG" in cell.source for cell in notebook.cells), "otter assign did not run"
    assert any("check(6)" in cell.source for cell in notebook.cells)


def test_handout_holds_what_students_need_and_nothing_of_the_instructors(dist):
    handout = dist / build_cli.HANDOUT_NAME
    listed = names(handout)
    for needed in ["student/__init__.py", "student/check.py", "student/submit.py", "student/tests/conftest.py",
                   "attention.ipynb", "requirements.txt", "README.md", *(f"student/{m}" for m in GRADED_MODULES)]:
        assert needed in listed, needed
    assert not [n for n in listed if n.split("/")[0] in ("grading_tests", "assignment", "autograder")]
    assert not [n for n in listed if "__pycache__" in n or n.endswith(".pyc")]
    for module, text in generated_stubs().items():
        assert read(handout, f"student/{module}") == text, f"{module} in the handout is not the stub"
    requirements = read(handout, "requirements.txt").splitlines()
    assert requirements[0] == packaging.CPU_INDEX and f"torch=={TORCH_PIN}" in requirements
    fallback = read(handout, packaging.PYPI_REQUIREMENTS).splitlines()   # the same pins, PyPI alone
    assert packaging.CPU_INDEX not in fallback and set(requirements[1:]) <= set(fallback)


@pytest.mark.parametrize("artefact", [build_cli.HANDOUT_NAME, "autograder.zip"])
def test_every_file_of_a_zip_unpacks_readable_by_everyone(dist, artefact):
    with zipfile.ZipFile(dist / artefact) as zf:
        modes = {info.filename: info.external_attr >> 16 for info in zf.infolist() if not info.is_dir()}
    assert not {name: oct(mode) for name, mode in modes.items() if mode & 0o444 != 0o444}
    assert oct(modes["requirements.txt"] & 0o777) == "0o644"


def test_handout_has_no_leaks(dist):
    assert leaks.find_leaks(dist / build_cli.HANDOUT_NAME) == []


def _hidden_test_name() -> str:
    return sorted(leaks.hidden_test_names())[0]


def _solution_line() -> str:
    return sorted(leaks.solution_lines())[0]


PLANTS = {
    "a grading test copied in": (
        lambda: ("student/tests/test_extra.py", (REPO / "grading_tests" / "test_part1_scaling.py").read_text()),
        "a copy of grading_tests/test_part1_scaling.py"),
    "the reference in place of a stub": (
        lambda: ("student/scaling.py", reference_source("scaling.py")), "BEGIN SOLUTION"),
    "one solution line": (lambda: ("student/notes.py", f"{_solution_line()}\n"), "reference solution line"),
    "a hidden test's name": (lambda: ("README.md", f"see {_hidden_test_name()}\n"), "names the hidden test"),
    "a hidden test's name in a notebook output": (
        lambda: ("attention.ipynb", nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
            "x", outputs=[nbformat.v4.new_output("stream", text=f"FAILED {_hidden_test_name()}")])]))),
        "names the hidden test"),
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_planted_leak_is_detected(dist, tmp_path, plant):
    make, expected = PLANTS[plant]
    name, text = make()
    planted = tmp_path / "handout.zip"
    with zipfile.ZipFile(dist / build_cli.HANDOUT_NAME) as source, zipfile.ZipFile(planted, "w") as target:
        for item in source.infolist():
            if item.filename != name:
                target.writestr(item, source.read(item))
        target.writestr(name, text)
    findings = leaks.find_leaks(planted)
    assert any(expected in finding for finding in findings), findings


def test_a_hidden_expected_value_is_detected(dist, tmp_path, monkeypatch):
    # The hidden suite pins only the lesson's public numbers today, so plant one it would hold.
    monkeypatch.setattr(leaks, "hidden_numbers", lambda: {"0.73105858"})
    planted = tmp_path / "handout.zip"
    shutil.copyfile(dist / build_cli.HANDOUT_NAME, planted)
    assert leaks.find_leaks(planted) == []
    with zipfile.ZipFile(planted, "a") as zf:
        zf.writestr("student/expected.txt", "weights = [0.73105858, 0.26894142]\n")
    assert leaks.find_leaks(planted) == ["student/expected.txt: holds 0.73105858, a value only the hidden suite has"]



def leaking_handout(folder, readme: str):
    """A copy of handout/ whose README says something it must not."""
    shutil.copytree(packaging.HANDOUT_DIR, folder)
    (folder / "README.md").write_text(readme)
    return folder


@pytest.mark.slow
def test_build_refuses_to_write_a_leaking_handout(tmp_path, monkeypatch):
    readme = f"Hint: read {_hidden_test_name()}.\n"
    monkeypatch.setattr(packaging, "HANDOUT_DIR", leaking_handout(tmp_path / "handout", readme))
    with pytest.raises(packaging.BuildError, match="leak"):
        build_cli.build(tmp_path)
    assert not (tmp_path / build_cli.HANDOUT_NAME).exists()


def test_autograder_zip_installs_the_pinned_cpu_torch(dist):
    autograder = dist / build_cli.AUTOGRADER_NAME
    requirements = read(autograder, "requirements.txt").splitlines()
    assert requirements[0] == packaging.CPU_INDEX
    assert [line for line in requirements if re.match(r"torch\b", line)] == [f"torch=={TORCH_PIN}+cpu"]
    assert not re.search(r"cuda|cu1\d\d", "\n".join(requirements), re.I)
    assert not re.search(r"pip install[^\n]*torch", read(autograder, "setup.sh")), "torch only from requirements.txt"
    assert "environment.yml" not in names(autograder), "no conda environment: setup.sh makes a venv"


def test_autograder_zip_carries_runner_plugin_engine_and_hidden_suite(dist):
    autograder = dist / build_cli.AUTOGRADER_NAME
    listed = names(autograder)
    otter_config = json.loads(read(autograder, "otter_config.json"))
    assert otter_config["plugins"] == [config.LOADER_PLUGIN] and otter_config["grade_from_log"] is False
    assert otter_config["show_hidden"] is True and otter_config["show_stdout"] is False
    for needed in ["run_autograder", "setup.sh", "requirements.txt", "grader/run/command.py",
                   "grader/run/sandbox.py", "grader/gradescope/run_autograder.py",
                   "grader/gradescope/plugin.py", "grader/gradescope/engine_bridge.py", "grading_tests/conftest.py",
                   f"files/{packaging.NOTEBOOK_NAME}"]:
        assert needed in listed, needed
    # Of assignment/ only the resolved spec, of student/ only what the handout holds beside the stubs (public): its
    # package file, and the public checks Gradescope runs on each upload with the table of parts they import.
    checks = sorted(f"student/tests/{path.name}" for path in (REPO / "student" / "tests").glob("*.py"))
    assert [n for n in listed if n.split("/")[0] in ("assignment", "student") and "__pycache__" not in n] == \
        ["assignment/assignment.toml", "assignment/spec.py", "assignment/spec_error.py", "student/__init__.py",
         "student/parts.py", *checks], \
        "no reference or student code"
    shipped = [n for n in listed if n.split("/")[0] in packaging.OUR_PACKAGES and "__pycache__" not in n]
    assert closure.missing_imports(REPO, shipped, packaging.OUR_PACKAGES) == []


def test_import_closure_catches_a_module_left_out():
    files = [f for f in packaging.shipped_files() if f != "grader/contain/isolation.py"]
    problems = closure.missing_imports(REPO, files, packaging.OUR_PACKAGES)
    assert any("grader.contain.isolation" in p for p in problems), problems


def test_build_reports_a_missing_source(tmp_path, monkeypatch):
    monkeypatch.setattr(packaging, "SHIPPED_SOURCES", (*packaging.SHIPPED_SOURCES, "grader/missing.py"))
    with pytest.raises(packaging.BuildError, match=r"missing grader/missing\.py"):
        packaging.build_autograder_zip(tmp_path / "autograder.zip")


def test_build_cli_says_why_it_failed(tmp_path):
    target = tmp_path / "not-a-folder"
    target.write_text("")
    proc = subprocess.run([sys.executable, "-m", "autograder", "build", "--out", str(target)],
                          cwd=REPO, capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr
    assert str(target) in proc.stderr


def test_shipped_files_are_the_repositorys(dist, tmp_path):
    with zipfile.ZipFile(dist / build_cli.AUTOGRADER_NAME) as zf:
        zf.extractall(tmp_path)
    for name in packaging.shipped_files():
        assert (tmp_path / name).read_bytes() == (REPO / name).read_bytes(), name


# Imports the named modules from the unzipped source (argv[1]) and prints each file of it that Python compiled.
COMPILED = """
import importlib, sys
source, compiled = sys.argv[1], []
sys.addaudithook(lambda event, args: event == "compile" and str(args[1]).startswith(source)
                 and compiled.append(args[1]))
for name in sys.argv[2:]:
    importlib.import_module(name)
print("\\n".join(compiled))
"""
IMPORTED = ["grader.run.gradebook", "grader.scoring", "grader.source_rules"]   # a dozen of ours, and no torch


def test_the_zips_modules_load_as_shipped_bytecode_with_nothing_compiled(dist, tmp_path):
    """The engine runs from the unzipped source writing no bytecode (PYTHONDONTWRITEBYTECODE): each process would
    compile what it imports, each submission's trusted process the hidden suite again, but for the bytecode the zip
    ships. Every shipped module has it, for its source as shipped (checked by hash, whatever the unzipped files'
    times); imported, nothing of ours is compiled, and without the bytecode (the defence off) everything is."""
    source = tmp_path / "source"
    with zipfile.ZipFile(dist / build_cli.AUTOGRADER_NAME) as zf:
        zf.extractall(source)
    for name in (name for name in packaging.shipped_files() if name.endswith(".py")):
        header = (source / importlib.util.cache_from_source(name)).read_bytes()[:16]
        assert header[:4] == importlib.util.MAGIC_NUMBER and header[4] == 0b11, name   # checked hash
        assert header[8:] == importlib.util.source_hash((source / name).read_bytes()), name

    def compiled() -> list[str]:
        proc = subprocess.run([sys.executable, "-c", COMPILED, str(source), *IMPORTED], cwd=source,
                              capture_output=True, text=True, timeout=SAFETY_NET_S,
                              env={**os.environ, "PYTHONPATH": str(source), "PYTHONDONTWRITEBYTECODE": "1"})
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout.split()
    assert compiled() == []
    for cache in source.rglob("__pycache__"):
        shutil.rmtree(cache)
    assert len(compiled()) >= 10
