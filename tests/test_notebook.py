"""The master notebook: valid Otter Assign input, teaching text that holds no graded code, and a
student version that runs end to end on the reference solution with every check cell passing."""
import ast
import os
import re
import shutil

import nbformat
import pytest
from nbclient import NotebookClient

from autograder.otter import packaging
from autograder.samples import write_submission
from student.parts import PARTS
from tests.patience import SAFETY_NET_S

SLOW_FIXTURES = {"student_version", "executed", "executed_on_stubs"}   # otter assign, a kernel (conftest.py)

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


# Safety nets, not budgets (tests/patience.py): the training cell takes seconds on a quiet machine and many minutes
# at a load of 30, where a kernel can take minutes to start (nbclient's defaults: 60 s to start, 4 s for a cell's
# last output).


def execute(notebook_path, folder, env=None):
    notebook = nbformat.read(notebook_path, as_version=4)
    NotebookClient(notebook, timeout=SAFETY_NET_S, startup_timeout=SAFETY_NET_S, iopub_timeout=SAFETY_NET_S,
                   raise_on_iopub_timeout=True, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute(env=env)
    notebook.metadata["work_folder"] = str(folder)
    return notebook


@pytest.fixture(scope="module")
def student_version(tmp_path_factory):
    """The student notebook, as otter assign writes it for the handout."""
    return packaging.student_notebook(MASTER, tmp_path_factory.mktemp("assigned") / MASTER.name)


@pytest.fixture(scope="module")
def executed(tmp_path_factory, student_version):
    """The student notebook run in a folder holding the reference solution."""
    root = tmp_path_factory.mktemp("notebook")
    folder = write_submission(root / "work")
    shutil.copyfile(student_version, folder / MASTER.name)
    # A decoy student/ package (the stubs) on PYTHONPATH: the notebook must use the one next to it.
    decoy = write_submission(root / "decoy", solution=False)
    return execute(folder / MASTER.name, folder, env={**os.environ, "PYTHONPATH": str(decoy)})


@pytest.fixture(scope="module")
def executed_on_stubs(tmp_path_factory, student_version):
    """The student notebook run on the untouched handout: every cell must run."""
    folder = write_submission(tmp_path_factory.mktemp("stubs") / "work", solution=False)
    shutil.copyfile(student_version, folder / MASTER.name)
    return execute(folder / MASTER.name, folder, env=dict(os.environ))


def all_output(notebook) -> str:
    return "\n".join(outputs_text(cell) for cell in notebook.cells)


def solution_cells(notebook) -> list[str]:
    """The sources of the cells between `# BEGIN SOLUTION` and `# END SOLUTION` raw cells."""
    found, inside = [], False
    for cell in notebook.cells:
        marker = cell.source.strip() if cell.cell_type == "raw" else ""
        if marker in ("# BEGIN SOLUTION", "# END SOLUTION"):
            inside = marker == "# BEGIN SOLUTION"
        elif inside:
            found.append(cell.source)
    return found


def test_master_is_valid_otter_assign_input():
    notebook = nbformat.read(MASTER, as_version=4)
    nbformat.validate(notebook)
    first = notebook.cells[0]
    assert first.cell_type == "raw" and first.source.startswith("# ASSIGNMENT CONFIG")
    assert not any(cell.get("outputs") for cell in notebook.cells), "commit the master without outputs"


def test_a_question_with_points_nothing_grades_is_refused_by_the_build():
    from autograder.otter import master, packaging
    text = MASTER.read_text()
    assert master.questions_with_points(text) == []   # the master's questions are all worth 0
    scored = text.replace('"name: q_sqrt_d\\n",\n    "manual: true\\n",\n    "points: 0"',
                          '"name: q_sqrt_d\\n",\n    "manual: true\\n",\n    "points: 5"')
    assert scored != text
    assert master.questions_with_points(scored) == ["q_sqrt_d (cell 10): points: 5"]
    with pytest.raises(packaging.BuildError, match=r"q_sqrt_d \(cell 10\): points: 5 carry points, which nothing "
                                                   r"grades.*Set `points: 0`"):
        packaging.check_master(scored)


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
    cell = nbformat.v4.new_code_cell("%autoreload 2\ndef split_heads(x, h):\n    return x")
    sneaky = nbformat.v4.new_notebook(cells=[cell])
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
    text = all_output(executed)
    for number in ("0.8808, 0.1192", "5.6569, 2.8284", "0.9442, 0.0558", "3.0558", "0.7311, 0.2689",
                   "0.1503, 0.8497", "0.0067, 0.9930, 0.0003", "(3, 3, 8, 8)", "1.0100", "3.4991",
                   "1.3022, 1.1991"):
        assert number in text, number
    # The cross-attention example states its expected values, and the student's module prints all three results.
    master = "\n".join(cell.source for cell in nbformat.read(MASTER, as_version=4).cells)
    assert "[[1.3022, 1.1991], [0.3983, 0.7889]]" in master
    assert text.count("1.3022, 1.1991") == 2 and "your cross-attention" in text


def test_notebook_draws_its_pictures(executed):
    images = [o for cell in executed.cells for o in cell.get("outputs", [])
              if o.output_type == "display_data" and "image/png" in o.data]
    # Figures: scaling effect, the three masks, worked-example heatmap, the student's heatmap, head colours,
    # mask expansion, the data flow of the module, the module's three heatmaps, the trained heads' maps.
    assert len(images) >= 9


def test_the_epilogue_trains_the_students_module_to_reverse_sequences(executed):
    text = all_output(executed)
    found = re.search(r"accuracy on 1000 new sequences: ([\d.]+)% of digits, ([\d.]+)% of whole sequences", text)
    assert found, text[-2000:]
    # Measured: 100% of digits and of sequences (600 seeded steps); 95% leaves room for other CPUs' rounding.
    assert float(found.group(1)) >= 95.0 and float(found.group(2)) >= 80.0, found.group(0)
    # Training says how far it is and how long is left, so a busy machine is never silent for minutes.
    progress = re.findall(r"step +(\d+)/600  loss [\d.]+ +[\d.]+ s, about \d+ s to go", text)
    assert [int(step) for step in progress] == [*range(1, 600, 50), 600], text[-2000:]
    maps = next(cell for cell in executed.cells if "attention_weights(" in cell.source and "hooks" in cell.source)
    assert any("image/png" in o.get("data", {}) for o in maps.outputs), "no attention maps of the trained heads"


def test_on_the_stubs_every_cell_runs_and_the_epilogue_skips_itself(executed_on_stubs):
    errors = [o for cell in executed_on_stubs.cells for o in cell.get("outputs", []) if o.output_type == "error"]
    assert not errors, [f"{o.ename}: {o.evalue}" for o in errors]
    text = all_output(executed_on_stubs)
    assert "Skipped: the epilogue needs your MultiHeadAttention (Part 5)." in text
    assert "Traceback" not in text and "accuracy on" not in text
    assert "not implemented yet (Part 1: scaled_scores is not implemented yet)" in text


def test_questions_have_answers_only_in_the_instructors_version(student_version):
    master = nbformat.read(MASTER, as_version=4)
    answers = solution_cells(master)
    assert len(answers) == 4 and all(answer.startswith("**Answer.**") for answer in answers), answers
    handed_out = nbformat.read(student_version, as_version=4)
    sources = "\n".join(cell.source for cell in handed_out.cells)
    assert "**Answer.**" not in sources
    for answer in answers:
        assert answer not in sources and answer.splitlines()[0] not in sources
    prompts = [cell.source for cell in handed_out.cells if "**Question" in cell.source]
    assert len(prompts) == 4
    assert sources.count("_Type your answer here, replacing this text._") == 4


def test_student_facing_text_speaks_to_students():
    text = "\n".join(cell.source for cell in nbformat.read(MASTER, as_version=4).cells
                     if cell.cell_type == "markdown").lower()
    for phrase in ("source notebook", "typo", "divide by sqrt(e)", "prints both results"):
        assert phrase not in text, phrase
    assert "each head attends with the scale" in text and "float64 inputs are computed in float64" in text
