"""The master notebook: valid Otter Assign input, teaching text that holds no graded code, and a
student version that runs end to end on the reference solution with every check cell passing."""
import ast
import os
import re

import nbformat
import pytest
from nbclient import NotebookClient

from autograder.otter import packaging
from autograder.samples import write_submission
from student.parts import PARTS

pytestmark = pytest.mark.slow

MASTER = packaging.MASTER_NOTEBOOK
GRADED_NAMES = {name.split(".")[0] for _title, names in PARTS.values() for name in names}
CHECK_CELL = re.compile(r"^check\((\d)\)$")


def code_of(notebook) -> str:
    """The notebook's Python, with IPython magics (`%load_ext ...`) left out so ast can parse it."""
    lines = [line for cell in notebook.cells if cell.cell_type == "code"
             for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    return "\n".join(lines)


def outputs_text(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type in ("execute_result", "display_data"):
            parts.append(output.data.get("text/plain", ""))
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}")
    return "".join(parts)


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The student notebook (otter assign output), run in a folder holding the reference solution."""
    root = tmp_path_factory.mktemp("notebook")
    folder = write_submission(root / "work")
    path = packaging.student_notebook(MASTER, folder / MASTER.name)
    notebook = nbformat.read(path, as_version=4)
    # A decoy student/ package (the stubs) on PYTHONPATH: the notebook must use the one next to it.
    decoy = write_submission(root / "decoy", solution=False)
    env = {**os.environ, "PYTHONPATH": str(decoy)}
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute(env=env)
    notebook.metadata["work_folder"] = str(folder)
    return notebook


def test_master_is_valid_otter_assign_input():
    notebook = nbformat.read(MASTER, as_version=4)
    nbformat.validate(notebook)
    first = notebook.cells[0]
    assert first.cell_type == "raw" and first.source.startswith("# ASSIGNMENT CONFIG")
    assert not any(cell.get("outputs") for cell in notebook.cells), "commit the master without outputs"


def test_notebook_defines_no_graded_function_and_imports_the_student_package():
    tree = ast.parse(code_of(nbformat.read(MASTER, as_version=4)))
    defined = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update(t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name))
    assert not defined & GRADED_NAMES, f"the notebook defines graded names itself: {defined & GRADED_NAMES}"
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert "student" in imported


def test_graded_name_detection_is_not_vacuous():
    sneaky = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("%autoreload 2\ndef split_heads(x, h):\n    return x")])
    tree = ast.parse(code_of(sneaky))
    assert {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)} & GRADED_NAMES == {"split_heads"}


def test_every_part_has_a_check_cell_and_all_pass_on_the_reference(executed):
    checked = {}
    for cell in executed.cells:
        match = CHECK_CELL.match(cell.source.strip()) if cell.cell_type == "code" else None
        if match:
            checked[int(match.group(1))] = outputs_text(cell)
    assert sorted(checked) == sorted(PARTS)
    for part, text in checked.items():
        assert "All selected checks pass." in text, f"check cell of part {part}:\n{text}"


def test_notebook_runs_without_errors_on_the_students_own_code(executed):
    text = "\n".join(outputs_text(cell) for cell in executed.cells)
    errors = [o for cell in executed.cells for o in cell.get("outputs", []) if o.output_type == "error"]
    assert not errors
    assert "not implemented yet" not in text, "the 'your turn' cells did not use the reference next to the notebook"
    assert f"Using your code in {executed.metadata['work_folder']}/student\n" in text


def test_notebook_shows_the_hand_computed_numbers(executed):
    text = "\n".join(outputs_text(cell) for cell in executed.cells)
    for number in ("0.8808, 0.1192", "5.6569, 2.8284", "0.9442, 0.0558", "3.0558", "0.7311, 0.2689",
                   "0.1503, 0.8497", "0.0067, 0.9930, 0.0003", "(3, 3, 8, 8)", "1.0100", "3.4991"):
        assert number in text, number


def test_notebook_draws_its_pictures(executed):
    images = [o for cell in executed.cells for o in cell.get("outputs", [])
              if o.output_type == "display_data" and "image/png" in o.data]
    # Figures: scaling effect, the three masks, worked-example heatmap, the student's heatmap, head colours,
    # mask expansion, the module's three heatmaps.
    assert len(images) >= 7
