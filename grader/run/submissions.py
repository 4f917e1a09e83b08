"""Find the submissions on the command line: folders, zips, folders of them, and Gradescope's exports.

    discover(paths, taken, staging, due) -> [Submission, ...]   in a stable order, each with a unique slug
    shard_of(found, shard)                                      the submissions of one shard of a class

Gradescope's "Export Submissions" (submission_metadata.yml beside one folder per submission)
is read as a folder or as its zip, when the grader names it: every submission is named by its
students, with their ids and emails and Gradescope's submission id. Never inside a folder of
submissions (a student's upload holding a metadata file is one submission, never rows for others).
An export zip is extracted (unpacking.extract_export), into a folder of the batch's own; its
submissions keep the zip's path and their folder's name as their identity across runs. Unpacking one
submission for its box is unpacking.py's.
"""
from __future__ import annotations

import datetime
import hashlib
import os
import pathlib
import re
import stat
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass

from grader.run.recorded import Recorded, recorded
from grader.run.unpacking import IGNORED, METADATA, PACKAGE, SubmissionError, extract_export
from grader.submitter import Submitter

# Reads an export's metadata: {submission folder name: its entry} (autograder/exports.py: YAML, the tools' own).
MetadataReader = Callable[[pathlib.Path], dict]
IDENTITY_PREFIX = "path-sha256:"   # a submission's identity: a digest of where it was read from (identity())


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
