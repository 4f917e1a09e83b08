"""Unpack one submission safely into a sandbox's private folder, and digest exactly what is graded.

    unpack(source, private_dir) -> Unpacked     the student/ package at private_dir/student, or SubmissionError
    fingerprint(location, scratch) -> str       a digest of what unpack gives (a changed submission is graded again)
    extract_export(archive, folder)             an export zip, under the same rules with a class-sized budget

A submission is a folder or a .zip holding the `student/` package, at its root or inside a few folders (as people
zip folders). A student who uploaded the graded modules (scaling.py, ...) without their folder is graded too: the
modules become the package, with the handout's own student/__init__.py. Archives and folders are untrusted: no
links, no paths leaving the folder, bounded file count and size, every oddity a one-line error. Only source
reaches a box: student/ keeps its .py files, each one the forbidden-call rule's reader could read
(grader/source_rules.py), and nothing else (bytecode, archives, compiled extensions, data); what was left out, and
why, is the row's note, and a module shipped only in a compiled form is flagged for the instructor.
"""
from __future__ import annotations

import ast
import hashlib
import importlib.machinery
import os
import pathlib
import re
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass

from grader import source_rules
from grader.paths import STUDENT_DIR

MAX_FILES = 2000
MAX_FILE_BYTES = 20 << 20
MAX_TOTAL_BYTES = 50 << 20
MAX_DIRECTORY_ENTRY_BYTES = 46 + 3 * 1024   # a zip's directory entry: its fixed part, a name, an extra field, a comment
# A whole class's export zip: hundreds of submissions, each within the limits above when it is unpacked.
EXPORT_MAX_FILES = 200_000
EXPORT_MAX_BYTES = 8 << 30
PACKAGE = "student"
# The handout's own package file (shipped in autograder.zip): what a flat upload of the modules is graded with.
HANDOUT_INIT = STUDENT_DIR / "__init__.py"
IGNORED = {"__MACOSX", "__pycache__", ".git", ".ipynb_checkpoints"}
NESTED_DEPTH = 4   # folders above student/ in an upload (a zip of a zip's folder of a course folder, say)
METADATA = "submission_metadata.yml"   # a Gradescope export's: an upload holding one is refused with a hint


class SubmissionError(Exception):
    """The submission cannot be graded; the message says why in one line."""

    def __init__(self, message: str, flags=()):
        super().__init__(message)
        self.flags = list(flags)


@dataclass(frozen=True)
class Unpacked:
    flags: tuple[str, ...] = ()   # for the instructor (a module shipped only compiled)
    note: str = ""                # for the row's message (files left out; the modules uploaded without their folder)


def graded_modules() -> set[str]:
    """The files of the graded modules ("scaling.py", ...), read from the handout's student/__init__.py (its
    _HOMES: graded name -> module), never imported: the batch and the worker do not run student code."""
    for node in ast.parse(HANDOUT_INIT.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(target, "id", "") == "_HOMES" for target in node.targets):
            return {f"{module}.py" for module in ast.literal_eval(node.value).values()}
    raise RuntimeError(f"{HANDOUT_INIT} defines no _HOMES")


def unpack(source: str, private_dir: str, *, read_sources: bool = True) -> Unpacked:
    """Put the submission's student/ package at private_dir/student, or raise SubmissionError. read_sources=False:
    keep every .py file, unread (fingerprint: whether the reader can read one follows from its bytes)."""
    path = pathlib.Path(source)
    staging = pathlib.Path(private_dir) / ".unpacked"
    if path.is_file():
        _extract_zip(path, staging)
    elif path.is_dir():
        _copy_tree(path, staging)
    else:
        raise SubmissionError("not a file or folder")
    package = _find_package(staging, allow_zip=path.is_dir())
    notes = []
    if package.name != PACKAGE:   # the graded modules without their folder: the handout's package file joins them
        shutil.copyfile(HANDOUT_INIT, package / "__init__.py")
        found = sorted(p.name for p in package.iterdir() if p.name in graded_modules())
        notes.append(f"graded {', '.join(found)}, uploaded without their student/ folder")
    package = package.rename(pathlib.Path(private_dir) / PACKAGE)
    shutil.rmtree(staging)
    left_out = _leave_out_what_is_not_source(package, read_sources)
    notes += [f"left out {', '.join(_shown(names))}: {why}" for why, names in left_out.items()]
    flags = _compiled_only_flags(package, left_out.get(NOT_SOURCE, []))
    if not (package / "__init__.py").is_file():
        raise SubmissionError("student/ has no __init__.py, so it is not a package", flags)
    return Unpacked(tuple(flags), "; ".join(notes))


NOT_SOURCE = "only .py source files are graded"
# What Python imports as a module without its source: bytecode and compiled extensions.
COMPILED = (*importlib.machinery.BYTECODE_SUFFIXES, *importlib.machinery.EXTENSION_SUFFIXES, ".pyo", ".pyd")


def _leave_out_what_is_not_source(package: pathlib.Path, read_sources: bool = True) -> dict[str, list[str]]:
    """Remove every file of the package that is not source, or is source the forbidden-call rule's reader could not
    read (so what the reader cannot read never runs). Returns why -> the files left out ("student/x.zip")."""
    left_out: dict[str, list[str]] = {}
    for path in sorted(p for p in package.rglob("*") if p.is_file()):
        if not source_rules.is_source(path.name):
            why = NOT_SOURCE
        else:
            why = source_rules.unreadable(path.read_bytes()) if read_sources else ""
        if why:
            path.unlink()
            if why != NOT_SOURCE or not path.name.startswith("."):   # an editor's or a system's dot-file: unsaid
                left_out.setdefault(why, []).append(f"{PACKAGE}/{path.relative_to(package).as_posix()}")
    return left_out


def _compiled_only_flags(package: pathlib.Path, left_out: list[str]) -> list[str]:
    """A module left out in a compiled form (bytecode, an extension) with no source beside it: code shipped only
    compiled."""
    only = []
    for name in left_out:
        path = package.parent / name
        source = path.with_name(path.name.split(".")[0] + source_rules.SOURCE_SUFFIX)
        if name.endswith(COMPILED) and not source.exists():
            only.append(name)
    return [f"code shipped only as bytecode or a compiled extension (left out, not graded): "
            f"{', '.join(_shown(only))}"] if only else []


def _shown(names: list[str], most: int = 5) -> list[str]:
    return names[:most] + ([f"and {len(names) - most} more"] if len(names) > most else [])


def open_for_reading(private_dir: str) -> None:
    """The unpacked submission is ours (root's when isolated): sandboxes may read it, none may write it."""
    os.chmod(private_dir, 0o755)
    for root, dirs, files in os.walk(private_dir):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)


def _find_package(root: pathlib.Path, allow_zip: bool) -> pathlib.Path:
    if (root / PACKAGE).is_dir():
        return root / PACKAGE
    children = [c for c in root.iterdir() if c.name not in IGNORED and not c.name.startswith((".", "._"))]
    folders = [c for c in children if c.is_dir()]
    if len(folders) == 1 and (folders[0] / PACKAGE).is_dir():
        return folders[0] / PACKAGE
    zips = [c for c in children if c.is_file() and c.name.lower().endswith(".zip")]
    if allow_zip and len(zips) == 1 and not folders:
        inner = root / ".inner"
        _extract_zip(zips[0], inner)
        return _find_package(inner, allow_zip=False)
    if not children:
        raise SubmissionError("empty submission: no files")
    flat = _flat_package(root) or (len(folders) == 1 and _flat_package(folders[0]))
    if flat:
        return flat
    export = " (it holds a Gradescope export's metadata: a grader names an export itself, never a folder above it)" \
        if any(c.name == METADATA for c in children) or any((f / METADATA).is_file() for f in folders) else ""
    deeper = [] if export else _packages_below(root)
    if len(deeper) == 1:   # unambiguous however deep it was zipped (within NESTED_DEPTH folders)
        return deeper[0]
    if deeper:
        shown = ", ".join(p.relative_to(root).as_posix() for p in deeper[:4])
        raise SubmissionError(f"{len(deeper)} student/ packages found ({shown}): upload only the one to grade")
    modules = ", ".join(sorted(graded_modules()))
    raise SubmissionError(f"no student/ package found{export}: upload the student/ folder itself (student/__init__.py"
                          f" and {modules} inside it), as `python -m student.submit` zips it")


def _packages_below(root: pathlib.Path) -> list[pathlib.Path]:
    """The student/ packages (with their __init__.py) at most NESTED_DEPTH folders below root, in none of the
    folders a zip tool or an editor adds (IGNORED, dot-folders)."""
    found, level = [], [root]
    for _depth in range(NESTED_DEPTH):
        level = [child for folder in level for child in sorted(folder.iterdir()) if child.is_dir()
                 and not child.is_symlink() and child.name not in IGNORED and not child.name.startswith(".")]
        found += [folder / PACKAGE for folder in level if (folder / PACKAGE / "__init__.py").is_file()]
    return found


def _flat_package(folder: pathlib.Path) -> pathlib.Path | None:
    """The graded modules lying in folder without their package: moved, with the other .py files beside them
    (the student's own helpers), into a package folder of their own; None when folder has none of them."""
    files = [p for p in folder.iterdir() if p.is_file()]
    if not graded_modules() & {p.name for p in files}:
        return None
    package = folder / ".flat-package"
    package.mkdir()
    for path in files:
        if path.suffix == ".py" and path.name != "__init__.py":
            os.rename(path, package / path.name)
    return package


class _Budget:
    def __init__(self, max_files: int = MAX_FILES, max_bytes: int = MAX_TOTAL_BYTES):
        self.files, self.bytes = 0, 0
        self.max_files, self.max_bytes = max_files, max_bytes

    def add(self, size: int, what: str) -> None:
        self.files += 1
        self.bytes += size
        if self.files > self.max_files:
            raise SubmissionError(f"too many files (more than {self.max_files})")
        if size > MAX_FILE_BYTES:
            raise SubmissionError(f"{what} is too large ({size} bytes; the limit is {MAX_FILE_BYTES})")
        if self.bytes > self.max_bytes:
            raise SubmissionError(f"the submission is too large (more than {self.max_bytes} bytes unpacked)")


def _safe_parts(name: str) -> list[str]:
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or ".." in parts:
        raise SubmissionError(f"unsafe path in the zip: {name!r} (absolute or leaving the folder)")
    return parts


def _extract_zip(path: pathlib.Path, dest: pathlib.Path, budget: _Budget | None = None) -> None:
    """Extract under the rules above (what is not source is left out of the package afterwards: unpack)."""
    budget = budget or _Budget()
    _check_directory(path, budget.max_files)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as error:
        raise SubmissionError(f"not a readable zip file ({error})") from None
    dest.mkdir(parents=True)
    with archive:
        members = archive.infolist()
        if len(members) > budget.max_files:
            raise SubmissionError(f"too many files in the zip ({len(members)}; the limit is {budget.max_files})")
        seen: dict[str, str] = {}    # every path the zip makes -> "file" or "folder"
        for member in members:
            parts = _safe_parts(member.filename)
            if stat.S_ISLNK(member.external_attr >> 16):
                raise SubmissionError(f"links are not allowed in a submission: {member.filename!r}")
            if member.flag_bits & 0x1:
                raise SubmissionError(f"encrypted zip entries are not supported: {member.filename!r}")
            if not parts or any(p in IGNORED for p in parts):
                continue
            _claim(seen, parts, "folder" if member.is_dir() else "file", member.filename)
            target = dest.joinpath(*parts)
            try:
                if member.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                budget.add(member.file_size, member.filename)
                target.parent.mkdir(parents=True, exist_ok=True)
                _copy_limited(archive.open(member), target, member.filename)
            except (zipfile.BadZipFile, EOFError, OSError, RuntimeError, ValueError, NotImplementedError) as error:
                raise SubmissionError(f"damaged zip: {member.filename!r} ({type(error).__name__}: {error})") from None


def extract_export(archive: pathlib.Path, folder: pathlib.Path) -> None:
    """An export zip extracted under the submissions' rules (no links, no escaping paths), a class-sized budget.
    Raises SubmissionError."""
    _extract_zip(archive, folder, _Budget(EXPORT_MAX_FILES, EXPORT_MAX_BYTES))



def _check_directory(path: pathlib.Path, max_files: int) -> None:
    """Refuse a zip whose central directory declares more entries than the budget allows, or is larger than such
    a directory can be, before it is parsed: zipfile reads the whole directory, one object per entry, and a zip
    of a few megabytes can declare millions. (zipfile's own reader of the end record, which is what ZipFile
    trusts; zip64 included.)"""
    try:
        with open(path, "rb") as handle:
            end = zipfile._EndRecData(handle)   # type: ignore[attr-defined]  # the reader ZipFile itself trusts
    except OSError as error:
        raise SubmissionError(f"not a readable zip file ({error})") from None
    if end is None:
        raise SubmissionError("not a readable zip file (no end of central directory)")
    entries, size = end[zipfile._ECD_ENTRIES_TOTAL], end[zipfile._ECD_SIZE]   # type: ignore[attr-defined]
    if entries > max_files:
        raise SubmissionError(f"too many files in the zip ({entries}; the limit is {max_files})")
    if size > max_files * MAX_DIRECTORY_ENTRY_BYTES:
        raise SubmissionError(f"the zip's directory is too large ({size} bytes for {entries} entries)")


def _claim(seen: dict[str, str], parts: list[str], kind: str, name: str) -> None:
    """Refuse a zip in which one path is both a file and a folder, or a file twice."""
    for depth in range(1, len(parts) + 1):
        path = "/".join(parts[:depth])
        wanted = kind if depth == len(parts) else "folder"
        had = seen.get(path)
        if had is not None and (had != wanted or wanted == "file"):
            what = "twice" if had == wanted else "as both a file and a folder"
            raise SubmissionError(f"the zip holds {'/'.join(parts[:depth])!r} {what} ({name!r})")
        seen[path] = wanted


def _copy_limited(source, target: pathlib.Path, what: str) -> None:
    """Copy at most MAX_FILE_BYTES (the size in a zip header can lie)."""
    with source, open(target, "xb") as out:
        written = 0
        while chunk := source.read(1 << 16):
            written += len(chunk)
            if written > MAX_FILE_BYTES:
                raise SubmissionError(f"{what} is too large (more than {MAX_FILE_BYTES} bytes unpacked)")
            out.write(chunk)


def _copy_tree(source: pathlib.Path, dest: pathlib.Path) -> None:
    budget = _Budget()
    dest.mkdir(parents=True)
    for root, dirs, files in os.walk(source):
        relative = pathlib.Path(root).relative_to(source)
        dirs[:] = sorted(d for d in dirs if d not in IGNORED)
        for name in dirs + files:
            mode = os.lstat(os.path.join(root, name)).st_mode
            if stat.S_ISLNK(mode):
                raise SubmissionError(f"links are not allowed in a submission: {relative / name}")
        for name in dirs:
            (dest / relative / name).mkdir()
        for name in files:
            full = os.path.join(root, name)
            if not stat.S_ISREG(os.lstat(full).st_mode):
                raise SubmissionError(f"not a regular file: {relative / name}")
            budget.add(os.path.getsize(full), str(relative / name))
            with open(full, "rb") as source_file:
                _copy_limited(source_file, dest / relative / name, str(relative / name))


# ------------------------------------------------------------------ what a submission holds

CONTENT_DIGEST = "unpacked-sha256:"   # what fingerprint() returns begins with this (older engines wrote others)


def fingerprint(location: str, scratch: str) -> str:
    """A digest of exactly what is graded: the submission unpacked as its worker unpacks it (every file kept,
    names and contents, in sorted order, with no cap: the unpacking's own limits bound it), what the unpacking
    dropped and says about it, or why it refuses the submission (every .py file counted, read or not by the rule's
    reader: whether it can be follows from its bytes). Files the unpacking skips unsaid (.git, __pycache__) change
    nothing graded and nothing here. A result remembers it, so that a submission changed since
    it was graded is graded again. scratch: a private folder of the grader's to unpack into (emptied after)."""
    digest = hashlib.sha256()
    folder = tempfile.mkdtemp(prefix="fingerprint-", dir=scratch)
    try:
        try:
            unpacked = unpack(location, folder, read_sources=False)   # parsing every source costs the batch
        except SubmissionError as error:
            digest.update(b"refused\0" + os.fsencode(str(error)) + b"\0" + os.fsencode("\0".join(error.flags)))
            return CONTENT_DIGEST + digest.hexdigest()
        package = os.path.join(folder, PACKAGE)
        for root, subfolders, files in os.walk(package):
            subfolders.sort()
            for name in sorted(files):
                path = os.path.join(root, name)
                digest.update(os.fsencode(os.path.relpath(path, package)) + b"\0")
                with open(path, "rb") as handle:
                    while chunk := handle.read(1 << 20):
                        digest.update(chunk)
                digest.update(b"\0")
        digest.update(os.fsencode("\0".join([unpacked.note, *unpacked.flags])))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return CONTENT_DIGEST + digest.hexdigest()
