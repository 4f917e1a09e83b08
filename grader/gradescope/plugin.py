"""The Otter plugin that makes `otter run -a autograder.zip SUBMISSION` grade exactly as Gradescope does.

Gradescope runs autograder.zip's run_autograder, which never starts otter (grader.gradescope.run_autograder).
`otter run`, the instructors' local check, does start otter, which would execute the student's notebook in
a Jupyter kernel, run its tests there and read the scores back from a pickle the kernel writes; before that
it unpickles the submission's `.OTTER_LOG` with dill. All of that is under the student's control (a planted
`.OTTER_LOG`, an `otter/` or `pickle.py` module shadowing the real ones, code patching otter's checker), and
the kernel alone costs seconds. This plugin, running in otter's trusted process:

before_grading
    1. grades the submission with run_autograder.grade: the batch command (sandboxed engine + hidden suite
       of this autograder.zip) and the settings of the spec shipped with it, so the results.json is Gradescope's;
       the student's code never runs in this process;
    2. empties the submission folder (even when grading failed), so no student file is left for otter to
       unpickle or for a kernel to import, and turns off grading from the log;
    3. replaces otter's notebook execution, for this one grading, with the engine's results: no kernel.
before_execution
    should a kernel start all the same (another otter version), it gets an empty notebook.
after_grading
    discards otter's own results and reports the engine's results.json instead.

otter imports this through the installed loader named in otter_config.json (otter-loader/: it puts this
autograder.zip's unpacked source folder first on the path), so `otter run` works from any folder.
"""
from __future__ import annotations

import copy
import pathlib
import shutil

import nbformat
from otter.plugins import AbstractOtterPlugin
from otter.run.run_autograder.utils import OtterRuntimeError, print_output
from otter.test_files import GradingResults

from assignment.spec import SpecError
from grader.gradescope import engine_bridge, run_autograder, view

# What otter itself puts into the submission folder before this plugin runs (not the student's).
OTTER_ADDED = frozenset({"tests", "__init__.py"})


def empty_folder(folder: pathlib.Path, keep) -> None:
    for entry in folder.iterdir():
        if entry.name in keep and entry.is_dir() and not entry.is_symlink():
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def blank_notebook() -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("Graded by the attention assignment's engine.")]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return notebook


class EngineResults(GradingResults):
    """Otter's results object, carrying the Gradescope results.json as the only source of scores."""

    engine_results: dict

    @property
    def total(self):
        return self.engine_results["score"]

    @property
    def possible(self):
        return view.possible_points(self.engine_results)

    def summary(self, public_only: bool = False) -> str:
        return self.engine_results.get("output", "")

    def to_gradescope_dict(self, ag_config) -> dict:
        return copy.deepcopy(self.engine_results)


def _skip_notebook_execution(take_results) -> bool:
    """Make otter's runner take the engine's results (take_results fills otter's results object) instead
    of executing a notebook, once. Returns False (otter then runs its kernel on the blank notebook) where
    this otter has no such step."""
    from otter.run.run_autograder.runners import python_runner

    original = getattr(python_runner, "grade_notebook", None)
    if original is None:
        return False

    def engine_results_instead(*args, **kwargs):
        python_runner.grade_notebook = original
        results = GradingResults([])
        take_results(results)
        return results

    python_runner.grade_notebook = engine_results_instead
    return True


class EngineGradingPlugin(AbstractOtterPlugin):

    def before_grading(self, ag_config):
        root = pathlib.Path(ag_config.autograder_dir).resolve()
        # Never trust the student's log: do not grade from it (it is also deleted below).
        ag_config.grade_from_log = False
        try:
            self.engine_results = run_autograder.grade(root, skip=OTTER_ADDED)
        except (engine_bridge.GradingFailed, SpecError) as error:
            print_output(f"\nThe grading engine failed:\n{error}\n")
            raise OtterRuntimeError("the grading engine failed; the instructor can see why in the "
                                    "autograder output") from None
        finally:
            self._neutralize(root / "submission")
        _skip_notebook_execution(self.after_grading)

    def _neutralize(self, submission_dir: pathlib.Path) -> None:
        """Leave only an empty notebook where the submission was, plus otter's own tests/ and __init__.py."""
        empty_folder(submission_dir, keep={"tests"})
        (submission_dir / "__init__.py").write_text("")
        nbformat.write(blank_notebook(), pathlib.Path(self.submission_path))

    def before_execution(self, submission):
        return blank_notebook()

    def after_grading(self, results):
        # Whatever otter computed (if it ran a kernel at all) is thrown away.
        results.clear_results()
        results.__class__ = EngineResults
        results.engine_results = self.engine_results
        results._catastrophic_error = None

    def generate_report(self):
        return run_autograder.report(self.engine_results)
