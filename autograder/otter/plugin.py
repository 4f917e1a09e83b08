"""The Otter plugin that makes `otter run` and Gradescope grade with our engine and our hidden suite.

Otter on its own would execute the student's notebook in a Jupyter kernel started in the submission
folder, run its tests in that kernel, and read the scores back from a pickle the kernel writes; before
that it unpickles the submission's `.OTTER_LOG` with dill. All three are under the student's control
(a planted `.OTTER_LOG`, an `otter/` or `pickle.py` module shadowing the real ones in the kernel,
code that patches otter's checker), so none of them may decide a grade. This plugin:

before_grading  (runs in otter's trusted process, before the log is read or any kernel starts)
    1. grades a private copy of the submission through engine_bridge (the batch command: sandboxed
       engine + hidden suite shipped in autograder.zip); the student's code never runs in this process;
    2. empties the submission folder (even when grading failed), so no student file is left for otter
       to unpickle or for the kernel to import, and turns off grading from the log.
before_execution
    replaces whatever otter would execute with an empty notebook.
after_grading
    discards otter's own results and reports the engine's results.json instead.

Name in otter_config.json: "autograder.otter.plugin.EngineGradingPlugin". Otter imports it by that
name: on Gradescope run_otter.py sits next to the `autograder` package; locally run
`python -m otter run ...` from the repository root (the console script `otter` does not see it).
"""
from __future__ import annotations

import copy
import pathlib
import shutil

import nbformat
from otter.plugins import AbstractOtterPlugin
from otter.run.run_autograder.utils import OtterRuntimeError, print_output
from otter.test_files import GradingResults

from autograder.otter import engine_bridge

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
    """Otter's results object, carrying the engine's results.json as the only source of scores."""

    engine_results: dict

    @property
    def total(self):
        return self.engine_results["score"]

    @property
    def possible(self):
        row = self.engine_results.get("extra_data", {}).get("gradebook_row", {})
        return row.get("max_score") or round(sum(test.get("max_score", 0) for test in self.engine_results["tests"]), 2)

    def summary(self, public_only: bool = False) -> str:
        return self.engine_results.get("output", "")

    def to_gradescope_dict(self, ag_config) -> dict:
        return copy.deepcopy(self.engine_results)


class EngineGradingPlugin(AbstractOtterPlugin):

    def before_grading(self, config):
        autograder_dir = pathlib.Path(config.autograder_dir).resolve()
        submission_dir, source_root = autograder_dir / "submission", autograder_dir / "source"
        # Never trust the student's log: do not grade from it (it is also deleted below).
        config.grade_from_log = False
        try:
            self.engine_results = engine_bridge.grade_submission(submission_dir, source_root, skip=OTTER_ADDED)
        except engine_bridge.GradingFailed as error:
            print_output(f"\nThe grading engine failed:\n{error}\n")
            raise OtterRuntimeError("the grading engine failed; the instructor can see why in the "
                                    "autograder output") from None
        finally:
            self._neutralize(submission_dir)

    def _neutralize(self, submission_dir: pathlib.Path) -> None:
        """Leave only an empty notebook where the submission was, plus otter's own tests/ and __init__.py."""
        empty_folder(submission_dir, keep={"tests"})
        (submission_dir / "__init__.py").write_text("")
        nbformat.write(blank_notebook(), pathlib.Path(self.submission_path))

    def before_execution(self, submission):
        return blank_notebook()

    def after_grading(self, results):
        # Whatever otter computed (from its kernel and its pickle) is thrown away.
        results.clear_results()
        results.__class__ = EngineResults
        results.engine_results = self.engine_results
        results._catastrophic_error = None

    def generate_report(self):
        results = self.engine_results
        return f"Graded by the engine: {results['score']:g} points.\n{results.get('output', '')}"
