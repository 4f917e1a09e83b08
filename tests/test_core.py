"""The assignment core: stubs in sync with the reference; the public checks select by part and the check command
reports them."""
import ast
import json
import os
import re
import subprocess
import sys

import pytest

from autograder import derived
from autograder.samples import write_submission
from autograder.stubs import GRADED_MODULES, stub_source
from grader.paths import REPO, STUDENT_DIR
from student.parts import PARTS
from tests.patience import SAFETY_NET_S


def test_every_derived_file_is_what_the_spec_and_the_reference_derive():
    """The stubs, student/parts.py, student/__init__.py, the tables of parts and of kernel layers (derived.py)."""
    assert derived.stale() == [], derived.stale_message(derived.stale())


def test_stub_generation_replaces_each_solution_block_with_a_part_error():
    source = 'def split_heads(x, h):\n    """Doc."""\n    # BEGIN SOLUTION\n    return x\n    # END SOLUTION\n'
    stub = stub_source(source)
    assert "return x" not in stub
    assert 'raise NotImplementedError("Part 3: split_heads is not implemented yet")' in stub
    assert '"""Doc."""' in stub
    with pytest.raises(ValueError):
        stub_source(source.replace("    # END SOLUTION\n", ""))


def test_a_solution_block_of_a_function_no_part_grades_is_handed_out_as_given_code():
    source = 'def helper(x):\n    """Doc."""\n    # BEGIN SOLUTION\n    return x + 1\n    # END SOLUTION\n'
    assert stub_source(source) == 'def helper(x):\n    """Doc."""\n    return x + 1\n'


def _signatures(text):
    tree = ast.parse(text)
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = (ast.dump(node.args) if isinstance(node, ast.FunctionDef) else "class",
                                ast.get_docstring(node))
    return found


def test_every_stub_keeps_the_reference_signature_and_docstring():
    from autograder.samples import reference_source
    for name in GRADED_MODULES:
        assert _signatures((STUDENT_DIR / name).read_text()) == _signatures(reference_source(name)), name


# That the reference passes every public check and the stubs fail every one, in the handout as built, is a verdict of
# the run-wide self-check (tests/test_selfcheck.py::test_the_selfcheck_passes_on_this_checkout).


SELECTED_BY_MARKER = """
import json, sys, pytest

class Collected:
    def __init__(self):
        self.ids = []

    def pytest_collection_finish(self, session):
        self.ids = [item.nodeid for item in session.items]

chosen = {}
for part in sys.argv[1:]:
    collected = Collected()
    pytest.main(["student/tests", "-p", "no:cacheprovider", "-q", "--collect-only", "-m", f"part{part}"],
                plugins=[collected])
    chosen[part] = collected.ids
print(json.dumps(chosen))
"""


def test_each_part_is_selectable_by_marker(tmp_path):
    """`pytest -m partN` collects Part N's checks, from its file, and only those (one child process collects them
    all; that they pass on the reference is the self-check's verdict)."""
    folder = write_submission(tmp_path / "reference", solution=True)
    proc = subprocess.run([sys.executable, "-c", SELECTED_BY_MARKER, *map(str, sorted(PARTS))], cwd=folder,
                          env={**os.environ, "PYTHONPATH": str(folder)}, capture_output=True, text=True,
                          timeout=SAFETY_NET_S)
    assert proc.returncode == 0, proc.stderr
    chosen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(chosen) == {str(part) for part in PARTS}
    for part, ids in chosen.items():
        assert ids and all(f"/test_part{part}_" in node for node in ids), (part, ids)


def test_check_command_prints_a_full_table_for_the_reference(tmp_path):
    folder = write_submission(tmp_path / "reference", solution=True)
    proc = subprocess.run([sys.executable, "-m", "student.check"], cwd=folder, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(folder)}, timeout=SAFETY_NET_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for number, (title, _names) in PARTS.items():
        line = next(line for line in proc.stdout.splitlines() if line.startswith(f"{number} "))
        passed, total = line.split(title)[1].split()[0].split("/")
        assert passed == total and int(total) > 0, line


def test_check_command_names_the_missing_part_on_the_stubs(tmp_path):
    folder = write_submission(tmp_path / "stubs", solution=False)
    proc = subprocess.run([sys.executable, "-m", "student.check", "--part", "3"], cwd=folder,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(folder)},
                          timeout=SAFETY_NET_S)
    assert proc.returncode == 1
    row = next(line for line in proc.stdout.splitlines() if line.startswith("3 "))
    assert re.search(r"  0/[1-9]\d*  ", row) and "not implemented yet (Part 3: split_heads" in row, proc.stdout


def test_check_command_names_a_syntax_error_and_still_checks_the_other_parts(tmp_path):
    broken = {"heads.py": "import torch\n\n\ndef split_heads(x, num_heads)\n    return x\n"}
    folder = write_submission(tmp_path / "broken", overrides=broken)
    proc = subprocess.run([sys.executable, "-m", "student.check"], cwd=folder, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(folder)}, timeout=SAFETY_NET_S)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line[:1].isdigit()}
    assert "could not load the checks: SyntaxError" in rows["3"] and "(heads.py, line 4)" in rows["3"], proc.stdout
    passed, total = re.search(r"  (\d+)/(\d+)  ", rows["1"]).groups()
    assert passed == total != "0" and "Traceback" not in proc.stdout + proc.stderr


def test_the_first_check_names_the_pytorch_build_and_never_fails_for_a_cuda_one(monkeypatch, capsys):
    """Issue 49: where PyTorch's CPU index is out of reach, pip installs PyPI's CUDA build (5 GB) in silence. The
    first `python -m student.check` names the build and, for a CUDA one, how to get the CPU build (pinned as
    requirements.txt pins torch, from the index the handout's requirements.txt names), and still passes."""
    import torch

    from autograder.otter import image
    from student import check, torch_build

    monkeypatch.setattr(check, "run_checks", lambda parts, verbose=False: (True, "the table"))
    assert check.main([]) == 0
    cpu = capsys.readouterr().out
    assert cpu.startswith(f"PyTorch {torch.__version__}, the CPU build.\n") and "pip" not in cpu, cpu

    monkeypatch.setattr(torch, "__version__", "2.13.0+cu130")
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch_build.metadata, "requires", lambda name: [
        "filelock", 'nvidia-cublas==13.1.0.3; platform_system == "Linux"', 'triton==3.6.0; platform_system == "Linux"'])
    assert check.main([]) == 0
    cuda = capsys.readouterr().out
    pin = re.search(r"^torch==([\w.]+)$", (REPO / "requirements.txt").read_text(), re.M).group(1)
    assert cuda.startswith("PyTorch 2.13.0+cu130, the CUDA 13.0 build. It works"), cuda
    assert (f"\n    pip install --force-reinstall --no-deps --index-url {image.CPU_INDEX.split('=', 1)[1]} "
            f"torch=={pin}+cpu\n") in cuda
    assert "\n    pip uninstall -y nvidia-cublas triton\n" in cuda
    assert cuda.endswith("the table\n\nAll selected checks pass.\n")
    assert check.main(["--part", "3"]) == 0 and "PyTorch" not in capsys.readouterr().out   # the notebook's cells
