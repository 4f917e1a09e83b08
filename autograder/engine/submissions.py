"""Find submissions on the command line and unpack one safely into a sandbox's private folder.

A submission is a folder or a .zip holding the `student/` package, at its root or
inside one top-level folder (as people zip folders). Archives and folders are
untrusted: no links, no paths leaving the folder, bounded file count and size.
"""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import stat
import zipfile
from dataclasses import dataclass

MAX_FILES = 2000
MAX_FILE_BYTES = 20 << 20
MAX_TOTAL_BYTES = 50 << 20
PACKAGE = "student"
IGNORED = {"__MACOSX", "__pycache__", ".git", ".ipynb_checkpoints"}
METADATA = "submission_metadata.yml"


class SubmissionError(Exception):
    """The submission cannot be graded; the message says why in one line."""


@dataclass(frozen=True)
class Submission:
    name: str      # shown in grades.csv (the student's name for a Gradescope export)
    slug: str      # file name of its results (unique, filesystem-safe)
    source: str    # the folder or zip


# ------------------------------------------------------------------ discovery

def discover(paths) -> list[Submission]:
    """All submissions under the given paths, in a stable order. Raises FileNotFoundError for a missing path."""
    found: list[tuple[str, str]] = []
    for raw in paths:
        path = pathlib.Path(raw)
        if not path.exists():
            raise FileNotFoundError(f"{raw}: no such file or folder")
        if path.is_file() or (path / PACKAGE).is_dir():
            found.append((_stem(path), str(path)))
        elif (path / METADATA).is_file():
            found += _gradescope_export(path)
        else:
            children = sorted(c for c in path.iterdir() if not c.name.startswith(".") and c.name not in IGNORED)
            found += [(_stem(child), str(child)) for child in children]
    return _with_unique_slugs(found)


def _stem(path: pathlib.Path) -> str:
    return path.name[:-4] if path.name.lower().endswith(".zip") else path.name


def _gradescope_export(folder: pathlib.Path) -> list[tuple[str, str]]:
    """Gradescope's "export submissions" folder: one folder per submission, students named in the metadata."""
    import yaml

    metadata = yaml.safe_load((folder / METADATA).read_text()) or {}
    found = []
    for child in sorted(c for c in folder.iterdir() if c.is_dir() and not c.name.startswith(".")):
        entry = metadata.get(child.name) or {}
        submitters = _field(entry, "submitters") or []
        names = [str(_field(s, "name") or _field(s, "email") or "").strip() for s in submitters if isinstance(s, dict)]
        names = [n for n in names if n]
        found.append((" & ".join(names) if names else child.name, str(child)))
    return found


def _field(mapping, key):
    """Gradescope writes Ruby-symbol keys (":name"); accept both spellings."""
    if not isinstance(mapping, dict):
        return None
    return mapping.get(f":{key}", mapping.get(key))


def _with_unique_slugs(found) -> list[Submission]:
    used: dict[str, int] = {}
    result = []
    for name, source in found:
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "submission"
        used[slug] = used.get(slug, 0) + 1
        if used[slug] > 1:
            slug = f"{slug}-{used[slug]}"
        result.append(Submission(name, slug, source))
    return result


# ------------------------------------------------------------------ unpacking

def unpack(source: str, private_dir: str) -> None:
    """Put the submission's student/ package at private_dir/student, or raise SubmissionError."""
    path = pathlib.Path(source)
    staging = pathlib.Path(private_dir) / ".unpacked"
    if path.is_file():
        _extract_zip(path, staging)
    elif path.is_dir():
        _copy_tree(path, staging)
    else:
        raise SubmissionError("not a file or folder")
    package = _find_package(staging, allow_zip=path.is_dir())
    os.rename(package, pathlib.Path(private_dir) / PACKAGE)
    shutil.rmtree(staging)
    if not (pathlib.Path(private_dir) / PACKAGE / "__init__.py").is_file():
        raise SubmissionError("student/ has no __init__.py, so it is not a package")


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
    raise SubmissionError("no student/ package found (expected student/__init__.py at the top or inside one folder)")


class _Budget:
    def __init__(self):
        self.files, self.bytes = 0, 0

    def add(self, size: int, what: str) -> None:
        self.files += 1
        self.bytes += size
        if self.files > MAX_FILES:
            raise SubmissionError(f"too many files (more than {MAX_FILES})")
        if size > MAX_FILE_BYTES:
            raise SubmissionError(f"{what} is too large ({size} bytes; the limit is {MAX_FILE_BYTES})")
        if self.bytes > MAX_TOTAL_BYTES:
            raise SubmissionError(f"the submission is too large (more than {MAX_TOTAL_BYTES} bytes unpacked)")


def _safe_parts(name: str) -> list[str]:
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or ".." in parts:
        raise SubmissionError(f"unsafe path in the zip: {name!r} (absolute or leaving the folder)")
    return parts


def _extract_zip(path: pathlib.Path, dest: pathlib.Path) -> None:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise SubmissionError(f"not a readable zip file ({error})") from None
    budget = _Budget()
    dest.mkdir(parents=True)
    with archive:
        members = archive.infolist()
        if len(members) > MAX_FILES:
            raise SubmissionError(f"too many files in the zip ({len(members)}; the limit is {MAX_FILES})")
        for member in members:
            parts = _safe_parts(member.filename)
            if stat.S_ISLNK(member.external_attr >> 16):
                raise SubmissionError(f"links are not allowed in a submission: {member.filename!r}")
            if member.flag_bits & 0x1:
                raise SubmissionError(f"encrypted zip entries are not supported: {member.filename!r}")
            if not parts or parts[0] in IGNORED or any(p in IGNORED for p in parts):
                continue
            target = dest.joinpath(*parts)
            if member.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            budget.add(member.file_size, member.filename)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                _copy_limited(archive.open(member), target, member.filename)
            except (zipfile.BadZipFile, EOFError, OSError, RuntimeError) as error:
                raise SubmissionError(f"damaged zip: {member.filename!r} ({error})") from None


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
            if name.endswith(".pyc"):
                continue
            full = os.path.join(root, name)
            if not stat.S_ISREG(os.lstat(full).st_mode):
                raise SubmissionError(f"not a regular file: {relative / name}")
            budget.add(os.path.getsize(full), str(relative / name))
            _copy_limited(open(full, "rb"), dest / relative / name, str(relative / name))
