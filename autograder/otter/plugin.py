"""The Otter plugin that makes `otter run` and Gradescope grade with our engine and our hidden suite.

Otter on its own would execute the student's notebook in a Jupyter kernel started in the submission
folder, run its tests in that kernel, and read the scores back from a pickle the kernel writes; before
that it unpickles the submission's `.OTTER_LOG` with dill. All three are under the student's control
(a planted `.OTTER_LOG`, an `otter/` or `pickle.py` module shadowing the real ones in the kernel,
code that patches otter's checker), so none of them may decide a grade. This plugin:

before_grading  (runs in otter's trusted process, before the log is read or any kernel starts)
    1. copies the submission's `student/` package to a private folder and grades it there through
       engine_bridge (the batch command: sandboxed engine + hidden suite shipped in autograder.zip);
    2. empties the submission folder, so no student file is left for otter to unpickle or for the
       kernel to import, and turns off grading from the log.
before_execution
    replaces whatever otter would execute with an empty notebook.
after_grading
    discards otter's own results and reports the engine's results.json instead.

Name in otter_config.json: "autograder.otter.plugin.EngineGradingPlugin".
"""
from __future__ import annotations

import copy
import pathlib
import shutil
import tempfile

import nbformat
from otter.plugins import AbstractOtterPlugin
from otter.run.run_autograder.utils import OtterRuntimeError, print_output
from otter.test_files import GradingResults

from autograder.otter import engine_bridge

PLUGIN_NAME = "autograder.otter.plugin.EngineGradingPlugin"
PACKAGE = "student"


def find_package(submission_dir: pathlib.Path) -> pathlib.Path | None:
    """The submitted `student/` package: at the top of the submission, or one folder down
    (a zip of the whole working folder). None when there is none, or more than one."""
    top = submission_dir / PACKAGE
    if (top / "__init__.py").is_file() and not top.is_symlink():
        return top
    nested = [p.parent for p in submission_dir.glob(f"*/{PACKAGE}/__init__.py")
              if not p.parent.is_symlink() and not p.parent.parent.is_symlink()]
    return nested[0] if len(nested) == 1 else None


def _ignore_links_and_bytecode(folder, names):
    """shutil.copytree filter: never follow a symlink out of the submission; skip stale bytecode."""
    base = pathlib.Path(folder)
    return [n for n in names if (base / n).is_symlink() or n == "__pycache__" or n.endswith(".pyc")]


def no_submission_results(reason: str) -> dict:
    """results.json for a submission without a gradable student/ package: 0 points, and why."""
    return {
        "score": 0.0,
        "output": f"Nothing was graded: {reason}\nSubmit the zip written by `python -m student.submit`.",
        "tests": [],
        "visibility": "visible",
    }


def empty_folder(folder: pathlib.Path, keep: set[str]) -> None:
    for entry in folder.iterdir():
        if entry.name in keep:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


class EngineResults(GradingResults):
    """Otter's results object, carrying the engine's results.json as the only source of scores."""

    engine_results: dict

    @property
    def total(self):
        return self.engine_results["score"]

    @property
    def possible(self):
        return sum(test.get("max_score", 0) for test in self.engine_results["tests"]) or 100

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
        self.engine_results = self._grade(submission_dir, source_root)
        self._neutralize(submission_dir)

    def _grade(self, submission_dir: pathlib.Path, source_root: pathlib.Path) -> dict:
        package = find_package(submission_dir)
        if package is None:
            return no_submission_results(f"no `{PACKAGE}/` package (with its __init__.py) in the submission.")
        with tempfile.TemporaryDirectory(prefix="otter-submission-") as private:
            shutil.copytree(package, pathlib.Path(private) / PACKAGE, ignore=_ignore_links_and_bytecode)
            try:
                return engine_bridge.grade_submission(private, source_root)
            except engine_bridge.GradingFailed as error:
                print_output(f"\nThe grading engine failed:\n{error}\n")
                raise OtterRuntimeError("the grading engine failed; the instructor can see why in the "
                                        "autograder output") from None

    def _neutralize(self, submission_dir: pathlib.Path) -> None:
        """Leave only an empty notebook (or script) where the submission was, plus otter's own files."""
        blank = pathlib.Path(self.submission_path)
        empty_folder(submission_dir, keep={"tests", "__init__.py"})
        if blank.suffix == ".ipynb":
            nbformat.write(self._blank_notebook(), blank)
        else:
            blank.write_text("")

    @staticmethod
    def _blank_notebook():
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_markdown_cell("Graded by the attention assignment's engine.")]
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        return notebook

    def before_execution(self, submission):
        return self._blank_notebook()

    def after_grading(self, results):
        # Whatever otter computed (from its kernel and its pickle) is thrown away.
        results.clear_results()
        results.__class__ = EngineResults
        results.engine_results = self.engine_results
        results._catastrophic_error = None

    def generate_report(self):
        return f"Graded by the engine: {self.engine_results['score']:g} points."
