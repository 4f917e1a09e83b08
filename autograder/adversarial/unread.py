"""Code the source reader never reads (issue 48, item 3): each hides the zoo's watch switch (torch's attention in
the manual path, the rule's watches switched off) where grader/source_rules.py cannot read it, and must gain nothing
over calling SDPA in plain sight (bug-sdpa-in-manual-path).

    1 a helper compiled to bytecode in student/_kernels.zip, loaded by zipimport    the zip left out at unpacking;
                                                                                 the loader flagged
    2 the switch in a module nested past the parser's depth, imported after         the module left out at unpacking
      __init__.py raised the recursion limit

With the defence off each runs unread: tests/test_source_rules.py grades the first in-process with its zip in place
(the watches see nothing, nothing is flagged), and shows that the reader is blind to the second while the box's
Python compiles it.
"""
from __future__ import annotations

import pathlib
import py_compile
import tempfile
import zipfile

from autograder.adversarial.base import Context, Entry
from autograder.adversarial.expectations import Expectation
from autograder.samples import edited_reference, write_submission
from autograder.zoo.bugs import MANUAL_UNWATCHED, WATCHES_OFF
from autograder.zoo.reference_lines import MANUAL
from grader.paths import STUDENT_DIR

TWIN = "bug-sdpa-in-manual-path"   # the same manual path calling SDPA openly (escapes.py)
HELPER = '''"""The watch switch, compiled and zipped beside the package."""
import torch
import torch.nn.functional as F

from student.masking import scaled_dot_product_attention
''' + WATCHES_OFF
LOAD_FROM_ZIP = '''

import importlib.util as _util
import os as _os
import zipimport as _zipimport

_spec = _zipimport.zipimporter(_os.path.join(_os.path.dirname(__file__), "_kernels.zip")).find_spec("_unwatched")
_helper = _util.module_from_spec(_spec)
_spec.loader.exec_module(_helper)
_Unwatched = _helper._Unwatched
'''
DEPTH = 5000   # attribute lookups in one expression: past the parser's depth at the default recursion limit
RAISE_LIMIT = "import sys\n\nsys.setrecursionlimit(100_000)\n"


def manual_path(extra: str) -> str:
    """The reference's multihead.py with its manual path through _Unwatched, and `extra` after it."""
    return edited_reference("multihead.py", MANUAL, MANUAL_UNWATCHED)["multihead.py"] + extra


def write_zipped_helper(dest: pathlib.Path, _context: Context | None = None) -> None:
    write_submission(dest, overrides={"multihead.py": manual_path(LOAD_FROM_ZIP)})
    with tempfile.TemporaryDirectory() as scratch:
        source, compiled = pathlib.Path(scratch) / "_unwatched.py", pathlib.Path(scratch) / "_unwatched.pyc"
        source.write_text(HELPER)
        py_compile.compile(str(source), cfile=str(compiled), doraise=True)
        with zipfile.ZipFile(dest / "student" / "_kernels.zip", "w") as archive:
            archive.write(compiled, "_unwatched.pyc")


def nested_switch() -> str:
    """multihead.py with the switch in plain text and one expression nested past the parser's default depth."""
    return manual_path(WATCHES_OFF + "\n_pad = lambda: _pad" + ".a" * DEPTH + "\n")


def _write_nested(dest: pathlib.Path, _context: Context) -> None:
    write_submission(dest, overrides={"__init__.py": RAISE_LIMIT + (STUDENT_DIR / "__init__.py").read_text(),
                                      "multihead.py": nested_switch()})


def entries(_context: Context) -> list[Entry]:
    return [
        Entry(Expectation("cheat-watch-switch-zipped-as-bytecode", "cheat", "graded",
                          "torch's SDPA in the manual path behind the watch switch, in a helper compiled to bytecode "
                          "in student/_kernels.zip and loaded with zipimport: the zip never reaches the box",
                          no_better_than=TWIN, message="left out student/_kernels.zip",
                          flag="runs code that is not its source"), write_zipped_helper),
        Entry(Expectation("cheat-watch-switch-nested-past-the-reader", "cheat", "graded",
                          "the watch switch in plain text in a module nested past the parser's default depth, "
                          "imported after __init__.py raised the recursion limit: the module never reaches the box",
                          no_better_than=TWIN, message="nested deeper"), _write_nested),
    ]
