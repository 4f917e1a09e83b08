"""Broken and hostile submission files: bad zips, path traversal, links, zip bombs, empty or incomplete folders."""
from __future__ import annotations

import os
import pathlib
import stat
import tempfile
import zipfile

from autograder.adversarial.base import Context, Entry
from autograder.adversarial.expectations import Expectation
from autograder.samples import write_submission
from grader.paths import REFERENCE_DIR

BOMB_BYTES = 200 << 20      # one entry that inflates to 200 MiB (stored in about 200 KiB)
MANY_FILES = 5000


def _package_files(top: str = "") -> dict[str, bytes]:
    """The reference submission's student/ files, keyed by their name inside a zip."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = write_submission(pathlib.Path(scratch))
        return {top + path.relative_to(folder).as_posix(): path.read_bytes()
                for path in sorted((folder / "student").rglob("*")) if path.is_file()}


def _zip(extra=(), top: str = "", package: bool = True):
    """A writer of a zip holding the reference package (under top/) plus extra (name, data, mode) entries,
    which replace package files of the same name."""
    def write(dest: pathlib.Path, context: Context):
        added = extra(context) if callable(extra) else extra
        replaced = {name for name, _data, _mode in added}
        with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in (_package_files(top) if package else {}).items():
                if name not in replaced:
                    archive.writestr(name, data)
            for name, data, mode in added:
                info = zipfile.ZipInfo(name)
                info.external_attr = mode << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, data)
    return write


def _raw(data: bytes):
    def write(dest: pathlib.Path, _context: Context):
        dest.write_bytes(data)
    return write


def _folder(files: dict[str, str]):
    def write(dest: pathlib.Path, _context: Context):
        dest.mkdir(parents=True)
        for name, text in files.items():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).write_text(text)
    return write


def _linked_folder(dest: pathlib.Path, _context: Context):
    write_submission(dest)
    (dest / "student" / "heads.py").unlink()
    (dest / "student" / "heads.py").symlink_to(REFERENCE_DIR / "heads.py")


def _traversal(context: Context):
    escape = "../" * 16 + str(context.markers / "escaped-dotdot.py").lstrip("/")
    return [(escape, b"print('escaped')\n", stat.S_IFREG | 0o644)]


def _absolute(context: Context):
    return [(str(context.markers / "escaped-absolute.py"), b"print('escaped')\n", stat.S_IFREG | 0o644)]


def _pipe(dest: pathlib.Path, _context: Context):
    os.mkfifo(dest)


def _input(name, why, message, write, *, suffix=".zip", status="error", score=0.0, forbidden=()) -> Entry:
    return Entry(Expectation(name, "input", status, why, score=score, message=message, forbidden_paths=forbidden),
                 write, suffix)


def entries(context: Context) -> list[Entry]:
    link = [("student/heads.py", str(REFERENCE_DIR / "heads.py").encode(), stat.S_IFLNK | 0o777)]
    bomb = [("student/weights.bin", bytes(BOMB_BYTES), stat.S_IFREG | 0o644)]
    many = [(f"student/data/{i}.txt", b"", stat.S_IFREG | 0o644) for i in range(MANY_FILES)]
    syntax = {"__init__.py": "from .heads import split_heads(\n"}   # the package itself cannot be imported
    return [
        _input("input-not-a-zip", "random bytes named .zip", "not a readable zip",
               _raw(b"PK\x03\x04" + os.urandom(300))),
        _input("input-empty-zip", "a valid zip with nothing inside", "empty", _zip(package=False)),
        _input("input-traversal-zip", "an entry named ../../... that would land outside", "unsafe path",
               _zip(_traversal), forbidden=(str(context.markers / "escaped-dotdot.py"),)),
        _input("input-absolute-path-zip", "an entry with an absolute path", "unsafe path",
               _zip(_absolute), forbidden=(str(context.markers / "escaped-absolute.py"),)),
        _input("input-symlink-zip", "student/heads.py stored as a link to the reference", "links are not allowed",
               _zip(link)),
        _input("input-zip-bomb", "one entry inflating to 200 MiB", "too large", _zip(bomb)),
        _input("input-too-many-files", f"{MANY_FILES} files", "too many files", _zip(many)),
        _input("input-empty-folder", "an empty folder", "empty", _folder({}), suffix=""),
        _input("input-no-package", "a notebook and a README, no student/", "no student/ package",
               _folder({"attention.ipynb": "{}", "README.md": "my work"}), suffix=""),
        _input("input-no-init", "student/ without __init__.py", "not a package",
               _folder({"student/heads.py": "x = 1\n"}), suffix=""),
        _input("input-symlink-folder", "a folder whose student/heads.py links to the reference",
               "links are not allowed", _linked_folder, suffix=""),
        _input("input-syntax-error", "student/__init__.py does not parse", "SyntaxError",
               lambda dest, _context: write_submission(dest, overrides=syntax), suffix=""),
        _input("input-package-in-a-folder-zip", "a good zip with student/ inside one top-level folder", "",
               _zip(top="my-attention-work/"), status="graded", score=100.0),
        Entry(Expectation("Victim Classmate", "input", "error", "a named pipe in the folder of submissions, named "
                          "after a classmate: no submission, never a row (issue 48)", absent=True), _pipe),
    ]
