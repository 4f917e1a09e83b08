"""Where things are: the one definition of the repository root and its main folders.

REPO is the folder holding the `autograder` and `grading_tests` packages: the repository on an
instructor's machine, /autograder/source on Gradescope (where autograder.zip is unpacked).
"""
import pathlib

REPO = pathlib.Path(__file__).resolve().parent.parent
GRADING_DIR = REPO / "grading_tests"
REFERENCE_DIR = REPO / "assignment" / "reference"
STUDENT_DIR = REPO / "student"
MASTER_NOTEBOOK = REPO / "assignment" / "notebook" / "attention.ipynb"
