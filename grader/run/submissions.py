"""Find submissions on the command line and unpack one safely into a sandbox's private folder.

A submission is a folder or a .zip holding the `student/` package, at its root or
inside one top-level folder (as people zip folders). A student who uploaded the graded
modules (scaling.py, ...) without their folder is graded too: the modules become the
package, with the handout's own student/__init__.py. Archives and folders are
untrusted: no links, no paths leaving the folder, bounded file count and size, every
oddity a one-line error. Only source reaches a box: student/ keeps its .py files, each one the
forbidden-call rule's reader could read (grader/source_rules.py), and nothing else (bytecode,
archives, compiled extensions, data); what was left out, and why, is the row's note, and a module
shipped only in a compiled form is flagged for the instructor.

Gradescope's "Export Submissions" (submission_metadata.yml beside one folder per submission)
is read as a folder or as its zip, when the grader names it: every submission is named by its
students, with their ids and emails and Gradescope's submission id. Never inside a folder of
submissions (a student's upload holding a metadata file is one submission, never rows for others).
An export zip is extracted, under the same rules with a class-sized budget, into a folder of the batch's own; its
submissions keep the zip's path and their folder's name as their identity across runs.
"""
from __future__ import annotations

import ast
import datetime
import hashlib
import importlib.machinery
import os
import pathlib
import re
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass

from grader import source_rules
from grader.paths import STUDENT_DIR
from grader.run.recorded import Recorded, recorded
from grader.submitter import Submitter

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
# Reads an export's metadata: {submission folder name: its entry} (autograder/exports.py: YAML, the tools' own).
MetadataReader = Callable[[pathlib.Path], dict]
IDENTITY_PREFIX = "path-sha256:"   # a submission's identity: a digest of where it was read from (identity())
NESTED_DEPTH = 4   # folders above student/ in an upload (a zip of a zip's folder of a course folder, say)
METADATA = "submission_metadata.yml"


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


@dataclass(frozen=True)
class Submission:
    name: str      # shown in grades.csv (the student's name for a Gradescope export)
    slug: str      # file name of its results (unique in the output folder, filesystem-safe)
    source: str    # its identity across runs: a digest of the folder or zip's real path (identity())
    path: str = ""                  # where to read it now (its real path, or its folder extracted from an export zip)
    submission_id: str = ""         # Gradescope's, from an export's folder name (submission_<id>)
    submitters: tuple[Submitter, ...] = ()   # from an export's metadata; more than one: a group
    recorded: Recorded | None = None         # from an export's metadata: Gradescope's score, time, due date

    @property
    def location(self) -> str:
        return self.path or self.source


# ------------------------------------------------------------------ discovery

def discover(paths, taken: dict[str, str] | None = None, staging: str | None = None,
             due: datetime.datetime | None = None, *, exports: bool = True,
             read_metadata: MetadataReader | None = None) -> list[Submission]:
    """All submissions under the given paths, in a stable order. Raises FileNotFoundError for a missing path,
    SubmissionError for an export zip that cannot be extracted.

    taken: slug -> source of the results already in the output folder; a source keeps its slug, and
    no other submission ever gets one of them.
    staging: a private folder of the batch to extract export zips into (a temporary one when not given).
    due: the due date of an export whose metadata names none (see recorded.py).
    exports: a path the grader named may be a Gradescope export (False: each path is one submission or a folder
    of them, as the Gradescope harness grades an upload). Only a path the grader named: a child of a folder of
    submissions is always one submission, so no upload can pass itself off as an export and write rows named
    after other students.
    read_metadata: how an export's metadata is read (the instructor's tools give autograder.exports.read_metadata;
    without one an export is refused, saying which command reads it).
    """
    def staging_folder() -> str:
        if staging is None:
            return tempfile.mkdtemp(prefix="autograder-exports-")
        os.makedirs(staging, mode=0o700, exist_ok=True)
        return staging

    found: list[_Found] = []
    for raw in paths:
        path = pathlib.Path(raw)
        if not path.exists():
            raise FileNotFoundError(f"{raw}: no such file or folder")
        export = _export(path, staging_folder, due, read_metadata) if exports else None
        if export is not None:
            found += export
        elif path.is_dir() and not (path / PACKAGE).is_dir():
            # A folder of submissions: each child that is a file or a folder is one, whatever it holds; anything
            # else there (a pipe, a socket, a link to nothing) holds no submission and is never a row.
            for child in sorted(c for c in path.iterdir() if not c.name.startswith(".") and c.name not in IGNORED):
                if _file_or_folder(child):
                    found.append(_one(child))
        else:
            found.append(_one(path))
    return _with_unique_slugs(found, taken or {})


@dataclass(frozen=True)
class _Found:
    name: str
    source: str
    path: str
    submission_id: str = ""
    submitters: tuple[Submitter, ...] = ()
    recorded: Recorded | None = None


def _export(path: pathlib.Path, staging_folder, due, read_metadata: MetadataReader | None) -> list[_Found] | None:
    """The submissions of an export (its folder or zip), or None when the path is not one. SubmissionError for an
    export where no reader of its metadata was given (the runtime's own command)."""
    real = os.path.realpath(path)
    export_folder = path.is_dir() and (path / METADATA).is_file()
    if not (export_folder or (path.is_file() and is_export_zip(path))):
        return None
    if read_metadata is None:
        raise SubmissionError(f"{path.name} is a Gradescope export: grade it with `python -m autograder grade`, which "
                              f"reads its metadata (the runtime's own command grades uploads)")
    if export_folder:
        return _gradescope_export(pathlib.Path(real), lambda child: identity(os.path.join(real, child)), due,
                                  read_metadata)
    # An export zip, extracted into a folder of its own: two exports may share a file name.
    folder = pathlib.Path(tempfile.mkdtemp(prefix="export-", dir=staging_folder())) / "export"
    extract_export(path, folder)
    inner = [c for c in folder.iterdir() if c.is_dir()]
    root = folder if (folder / METADATA).is_file() else inner[0]
    return _gradescope_export(root, lambda child: identity(f"{real}::{child}"), due, read_metadata)


def _file_or_folder(path: pathlib.Path) -> bool:
    """Whether path (its target, for a link) is a regular file or a folder."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def _one(path: pathlib.Path) -> _Found:
    real = os.path.realpath(path)
    return _Found(_stem(path), identity(real), real)


def identity(source: str) -> str:
    """A submission's identity across runs: a digest of where it was read from (its real path; in an export zip,
    "ZIP::FOLDER"). Its results file then names no folder of the grader's machine, and every file name has one,
    bytes that are not UTF-8 included."""
    return IDENTITY_PREFIX + hashlib.sha256(os.fsencode(source)).hexdigest()


def identity_of_earlier(source: str) -> str:
    """The identity of a row written by an earlier version, which kept the path itself (or "bytes:" and the hex of
    a path that is not UTF-8): so its submission keeps its results file and is not graded again for that."""
    if source.startswith(IDENTITY_PREFIX):
        return source
    raw = bytes.fromhex(source.removeprefix("bytes:")) if source.startswith("bytes:") else os.fsencode(source)
    return IDENTITY_PREFIX + hashlib.sha256(raw).hexdigest()


def is_export_zip(path: pathlib.Path) -> bool:
    """A zip with submission_metadata.yml at its top or inside its one top folder (as Gradescope writes it)."""
    if not path.name.lower().endswith(".zip"):
        return False
    try:
        with zipfile.ZipFile(path) as archive:
            names = [name.replace("\\", "/").strip("/") for name in archive.namelist()]
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return False
    tops = {name.split("/")[0] for name in names if name and not name.startswith("__MACOSX")}
    return METADATA in names or (len(tops) == 1 and f"{next(iter(tops))}/{METADATA}" in names)


def extract_export(archive: pathlib.Path, folder: pathlib.Path) -> None:
    """An export zip extracted under the submissions' rules (no links, no escaping paths), a class-sized budget.
    Raises SubmissionError."""
    _extract_zip(archive, folder, _Budget(EXPORT_MAX_FILES, EXPORT_MAX_BYTES))


def _stem(path: pathlib.Path) -> str:
    return path.name[:-4] if path.name.lower().endswith(".zip") else path.name


def _gradescope_export(folder: pathlib.Path, source_of, due, read_metadata: MetadataReader) -> list[_Found]:
    """Gradescope's "export submissions" folder: one folder per submission, students named in the metadata.
    source_of(child folder name) -> that submission's identity; due: the grader's due date (recorded.py)."""
    metadata = read_metadata(folder)
    found = []
    for child in sorted(c for c in folder.iterdir() if c.is_dir() and not c.name.startswith(".")
                        and c.name not in IGNORED):
        entry = metadata.get(child.name) or {}
        submitters = tuple(_submitter(s) for s in (_field(entry, "submitters") or []) if isinstance(s, dict))
        submitters = tuple(s for s in submitters if s.name or s.sid or s.email)
        names = [s.name or s.email or s.sid for s in submitters]
        match = re.fullmatch(r"submission_(\d+)", child.name)
        found.append(_Found(" & ".join(names) if names else child.name, source_of(child.name), str(child),
                            match.group(1) if match else "", submitters,
                            recorded(entry if isinstance(entry, dict) else {}, _field, due)))
    return found


def _submitter(entry: dict) -> Submitter:
    return Submitter(*(str(_field(entry, key) or "").strip() for key in ("name", "sid", "email")))


def _field(mapping, key):
    """Gradescope writes Ruby-symbol keys (":name"); accept both spellings."""
    if not isinstance(mapping, dict):
        return None
    return mapping.get(f":{key}", mapping.get(key))


def _with_unique_slugs(found: list[_Found], taken: dict[str, str]) -> list[Submission]:
    used = set(taken)
    mine = {source: slug for slug, source in taken.items()}
    result = []
    for item in found:
        slug = mine.get(item.source)
        if slug is None:
            base = re.sub(r"[^A-Za-z0-9._-]+", "_", item.name).strip("._-")[:80] or "submission"
            slug, count = base, 1
            while slug in used:
                count += 1
                slug = f"{base}-{count}"
        used.add(slug)
        result.append(Submission(item.name, slug, item.source, item.path, item.submission_id, item.submitters,
                                 item.recorded))
    return result


def shard_of(found: list[Submission], shard: tuple[int, int] | None) -> list[Submission]:
    """The submissions of shard i of n (from 1), or all of them (None): a split by each one's identity, the same on
    every machine that runs a shard and whatever else the class holds. (Slugs are given over the whole class first,
    so shards writing into one output folder name their results files as one run would.)"""
    if shard is None:
        return found
    index, count = shard
    return [s for s in found if int(hashlib.sha256(s.source.encode()).hexdigest(), 16) % count == index - 1]


# ------------------------------------------------------------------ unpacking

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
    import hashlib
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
