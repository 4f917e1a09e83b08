"""Find submissions on the command line and unpack one safely into a sandbox's private folder.

A submission is a folder or a .zip holding the `student/` package, at its root or
inside one top-level folder (as people zip folders). Archives and folders are
untrusted: no links, no paths leaving the folder, bounded file count and size, every
oddity a one-line error. Compiled bytecode (.pyc) is dropped from both: graded code must
be readable, and a module that exists only as bytecode is flagged for the instructor.
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

    def __init__(self, message: str, flags=()):
        super().__init__(message)
        self.flags = list(flags)


@dataclass(frozen=True)
class Unpacked:
    flags: tuple[str, ...] = ()   # for the instructor (bytecode that was dropped)


@dataclass(frozen=True)
class Submission:
    name: str      # shown in grades.csv (the student's name for a Gradescope export)
    slug: str      # file name of its results (unique in the output folder, filesystem-safe)
    source: str    # the folder or zip (its real path: the submission's identity across runs)


# ------------------------------------------------------------------ discovery

def discover(paths, taken: dict[str, str] | None = None) -> list[Submission]:
    """All submissions under the given paths, in a stable order. Raises FileNotFoundError for a missing path.

    taken: slug -> source of the results already in the output folder; a source keeps its slug, and
    no other submission ever gets one of them.
    """
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
    return _with_unique_slugs([(name, os.path.realpath(source)) for name, source in found], taken or {})


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


def _with_unique_slugs(found, taken: dict[str, str]) -> list[Submission]:
    used = set(taken)
    mine = {source: slug for slug, source in taken.items()}
    result = []
    for name, source in found:
        slug = mine.get(source)
        if slug is None:
            base = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-")[:80] or "submission"
            slug, count = base, 1
            while slug in used:
                count += 1
                slug = f"{base}-{count}"
        used.add(slug)
        result.append(Submission(name, slug, source))
    return result


# ------------------------------------------------------------------ unpacking

def unpack(source: str, private_dir: str) -> Unpacked:
    """Put the submission's student/ package at private_dir/student, or raise SubmissionError."""
    path = pathlib.Path(source)
    staging = pathlib.Path(private_dir) / ".unpacked"
    dropped: list[str] = []
    if path.is_file():
        _extract_zip(path, staging, dropped)
    elif path.is_dir():
        _copy_tree(path, staging, dropped)
    else:
        raise SubmissionError("not a file or folder")
    package = _find_package(staging, allow_zip=path.is_dir(), dropped=dropped)
    os.rename(package, pathlib.Path(private_dir) / PACKAGE)
    shutil.rmtree(staging)
    flags = _bytecode_flags(pathlib.Path(private_dir) / PACKAGE, dropped)
    if not (pathlib.Path(private_dir) / PACKAGE / "__init__.py").is_file():
        raise SubmissionError("student/ has no __init__.py, so it is not a package", flags)
    return Unpacked(tuple(flags))


def _bytecode_flags(package: pathlib.Path, dropped: list[str]) -> list[str]:
    """A dropped .pyc whose module has no .py beside it: code shipped only as bytecode."""
    only = []
    for name in dropped:
        stem = pathlib.PurePosixPath(name)
        module = stem.name.split(".")[0] + ".py"
        folder = stem.parent.parent if stem.parent.name == "__pycache__" else stem.parent
        parts = folder.parts[folder.parts.index(PACKAGE) + 1:] if PACKAGE in folder.parts else folder.parts
        if not package.joinpath(*parts, module).is_file():
            only.append(name)
    if not only:
        return []
    shown = ", ".join(only[:5]) + (" ..." if len(only) > 5 else "")
    return [f"code shipped only as bytecode (dropped, not graded): {shown}"]


def open_for_reading(private_dir: str) -> None:
    """The unpacked submission is ours (root's when isolated): sandboxes may read it, none may write it."""
    os.chmod(private_dir, 0o755)
    for root, dirs, files in os.walk(private_dir):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)


def _find_package(root: pathlib.Path, allow_zip: bool, dropped: list[str]) -> pathlib.Path:
    if (root / PACKAGE).is_dir():
        return root / PACKAGE
    children = [c for c in root.iterdir() if c.name not in IGNORED and not c.name.startswith((".", "._"))]
    folders = [c for c in children if c.is_dir()]
    if len(folders) == 1 and (folders[0] / PACKAGE).is_dir():
        return folders[0] / PACKAGE
    zips = [c for c in children if c.is_file() and c.name.lower().endswith(".zip")]
    if allow_zip and len(zips) == 1 and not folders:
        inner = root / ".inner"
        _extract_zip(zips[0], inner, dropped)
        return _find_package(inner, allow_zip=False, dropped=dropped)
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


def _is_bytecode(name: str) -> bool:
    return name.lower().endswith((".pyc", ".pyo"))


def _extract_zip(path: pathlib.Path, dest: pathlib.Path, dropped: list[str]) -> None:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as error:
        raise SubmissionError(f"not a readable zip file ({error})") from None
    budget = _Budget()
    dest.mkdir(parents=True)
    with archive:
        members = archive.infolist()
        if len(members) > MAX_FILES:
            raise SubmissionError(f"too many files in the zip ({len(members)}; the limit is {MAX_FILES})")
        seen: dict[str, str] = {}    # every path the zip makes -> "file" or "folder"
        for member in members:
            parts = _safe_parts(member.filename)
            if stat.S_ISLNK(member.external_attr >> 16):
                raise SubmissionError(f"links are not allowed in a submission: {member.filename!r}")
            if member.flag_bits & 0x1:
                raise SubmissionError(f"encrypted zip entries are not supported: {member.filename!r}")
            if not parts or any(p in IGNORED for p in parts):
                continue
            if _is_bytecode(parts[-1]) and not member.is_dir():
                dropped.append("/".join(parts))
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


def _copy_tree(source: pathlib.Path, dest: pathlib.Path, dropped: list[str]) -> None:
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
            if _is_bytecode(name):
                dropped.append((relative / name).as_posix())
                continue
            full = os.path.join(root, name)
            if not stat.S_ISREG(os.lstat(full).st_mode):
                raise SubmissionError(f"not a regular file: {relative / name}")
            budget.add(os.path.getsize(full), str(relative / name))
            with open(full, "rb") as source_file:
                _copy_limited(source_file, dest / relative / name, str(relative / name))
