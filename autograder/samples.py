"""Make submission folders for tests, benchmarks and demos: stubs, the reference, or the reference with a bug.

A submission folder holds a `student/` package, as a student would hand it in.
"""
import pathlib
import shutil

from autograder.stubs import GRADED_MODULES
from grader.paths import REFERENCE_DIR, STUDENT_DIR


def _copy_package(dest: pathlib.Path) -> pathlib.Path:
    package = dest / "student"
    shutil.copytree(STUDENT_DIR, package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return package


def write_submission(dest, *, solution: bool = True, overrides: dict[str, str] | None = None) -> pathlib.Path:
    """Write a submission folder at dest and return it.

    solution: True fills the graded modules with the reference solution, False leaves the stubs.
    overrides: file name inside student/ -> its full text, applied last (a bug, another correct variant).
    """
    dest = pathlib.Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    package = _copy_package(dest)
    if solution:
        for name in GRADED_MODULES:
            shutil.copyfile(REFERENCE_DIR / name, package / name)
    for name, text in (overrides or {}).items():
        (package / name).write_text(text)
    return dest


def reference_source(module: str) -> str:
    """The reference text of one graded module, e.g. reference_source("masking.py")."""
    return (REFERENCE_DIR / module).read_text()


def edited_reference(module: str, old: str, new: str) -> dict[str, str]:
    """An overrides dict: the reference module with `old` replaced by `new` exactly once.

    Raises ValueError when `old` does not occur exactly once, so an edit can never silently miss.
    """
    text = reference_source(module)
    count = text.count(old)
    if count != 1:
        raise ValueError(f"{module}: expected exactly one {old!r}, found {count}")
    return {module: text.replace(old, new)}
