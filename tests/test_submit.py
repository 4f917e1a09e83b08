"""python -m student.submit: runs the public checks, names the functions still stubbed, and writes
attention-submission.zip, which the batch command grades (and otter run too: tests/test_otter_run.py)."""
import json
import subprocess
import sys
import zipfile

import nbformat
import pytest

from autograder.samples import write_submission
from autograder.stubs import GRADED_MODULES, generated_stubs
from grader.gradescope import engine_bridge
from grader.paths import REPO
from student.submit import DEFAULT_ZIP, unimplemented
from tests.patience import SAFETY_NET_S

SLOW_FIXTURES = {"submitted"}   # student.submit run on the reference and the stubs (conftest.py)

ALL_STUBBED = ["heads.split_heads", "heads.merge_heads", "masking.causal_mask", "masking.padding_mask",
               "masking.apply_mask", "masking.scaled_dot_product_attention", "multihead.MultiHeadAttention.__init__",
               "multihead.MultiHeadAttention.forward", "multihead.MultiHeadAttention._fused_attention",
               "padding.expand_padding_mask", "scaling.scaled_scores"]


def submit(folder, *args):
    proc = subprocess.run([sys.executable, "-m", "student.submit", *args], cwd=folder,
                          capture_output=True, text=True, timeout=SAFETY_NET_S)
    return proc.returncode, proc.stdout + proc.stderr


def warned(output: str) -> list[str]:
    """The names listed under the stub warning."""
    if "WARNING: still not implemented" not in output:
        return []
    block = output.split("WARNING: still not implemented", 1)[1].split("\n\n", 1)[0]
    return [line.strip() for line in block.splitlines()[1:] if line.strip()]


@pytest.fixture(scope="module")
def submitted(tmp_path_factory):
    root = tmp_path_factory.mktemp("submit")
    reference = write_submission(root / "reference")
    (reference / "attention.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    stubs = write_submission(root / "stubs", solution=False)
    return {"reference": (reference, *submit(reference)), "stubs": (stubs, *submit(stubs))}


def test_reference_passes_the_checks_and_is_zipped_as_it_is(submitted):
    folder, code, output = submitted["reference"]
    assert code == 0 and "All public checks pass." in output and warned(output) == []
    with zipfile.ZipFile(folder / DEFAULT_ZIP) as zf:
        listed = zf.namelist()
        for module in GRADED_MODULES:
            assert zf.read(f"student/{module}") == (folder / "student" / module).read_bytes()
        assert zf.read("attention.ipynb") == (folder / "attention.ipynb").read_bytes()
    assert not [n for n in listed if "__pycache__" in n or n.endswith(".pyc") or n.startswith(".")]
    assert all(n.startswith("student/") or n == "attention.ipynb" for n in listed), listed


def test_stubs_still_get_a_zip_with_every_stub_named(submitted):
    folder, code, output = submitted["stubs"]
    assert code == 0 and "Some public checks fail" in output
    assert sorted(warned(output)) == sorted(ALL_STUBBED)
    with zipfile.ZipFile(folder / DEFAULT_ZIP) as zf:
        notebook = nbformat.reads(zf.read("attention.ipynb").decode(), as_version=4)
    nbformat.validate(notebook)   # the placeholder: this folder has no notebook
    assert "placeholder notebook" in output


def test_a_partly_done_submission_names_only_what_is_left(tmp_path):
    folder = write_submission(tmp_path / "partial", overrides={"heads.py": generated_stubs()["heads.py"]})
    code, output = submit(folder, "--no-checks", "--out", str(tmp_path / "mine.zip"))
    assert code == 0 and "Running the public checks" not in output
    assert warned(output) == ["heads.split_heads", "heads.merge_heads"]
    assert (tmp_path / "mine.zip").is_file()


def test_the_batch_command_grades_the_zips(submitted, tmp_path):
    zips = tmp_path / "zips"
    zips.mkdir()
    for name, (folder, _code, _output) in submitted.items():
        (zips / f"{name}.zip").write_bytes((folder / DEFAULT_ZIP).read_bytes())
    engine_bridge.run_engine([zips], tmp_path / "out", REPO, workers=2)
    scores = {p.stem: json.loads(p.read_text())["score"] for p in (tmp_path / "out" / "results").glob("*.json")}
    assert scores == {"reference": 100.0, "stubs": 0.0}


def test_an_unwritable_destination_is_a_clear_error(submitted, tmp_path):
    folder = submitted["reference"][0]
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, output = submit(folder, "--no-checks", "--out", str(blocker / "sub.zip"))
    assert code == 1 and "could not write" in output and "Traceback" not in output


def test_links_are_left_out_with_a_note(tmp_path):
    folder = write_submission(tmp_path / "linked")
    (folder / "student" / "data.py").symlink_to("/etc/hostname")
    code, output = submit(folder, "--no-checks")
    assert code == 0 and "skipped data.py: a symbolic link" in output
    with zipfile.ZipFile(folder / DEFAULT_ZIP) as zf:
        assert "student/data.py" not in zf.namelist()


def test_unimplemented_reports_a_module_that_does_not_parse(tmp_path):
    package = tmp_path / "student"
    package.mkdir()
    (package / "scaling.py").write_text("def scaled_scores(q, k:\n")
    (package / "heads.py").write_text(generated_stubs()["heads.py"])
    found = unimplemented(package)
    assert found[0] == "heads.split_heads" and found[1] == "heads.merge_heads"
    assert found[2].startswith("scaling.py: does not parse")
