"""Rename a graded function everywhere the project names it, then rewrite what is derived.

    python -m autograder rename OLD NEW [--dry-run]

A graded function's name is written in many files on purpose: the reference and its stubs, the hidden tests
(their names and their feedback, which students read), the handout's checks and README, the notebook, the zoo of
bugs and variants, the adversarial payloads (student code, which must call it by name), the docs and the
project's own tests. This command renames it in all of them at once, as an editor's rename does, and in the
names built from it too (`test_OLD_values`, `_OLD`), so that no student reads the old name: every occurrence of
OLD not touching a letter or digit, in every text file of the checkout, except inside another graded name
(`expand_padding_mask` keeps its `padding_mask`). Then it runs `generate` for the derived files. CHANGELOG.md keeps
the old name: it records what was.

Refused, with the reason, before anything is written:
  - OLD that is not a graded function of assignment/assignment.toml (the module class's methods keep the names
    nn.Module and the handout give them);
  - OLD in a parameter's name (`padding_mask` is also MultiHeadAttention.forward's: renaming it would change that
    signature), or OLD or NEW a name PyTorch defines (`scaled_dot_product_attention` is also
    torch.nn.functional's: the calls to PyTorch's would be renamed too). Such a rename is made by hand;
  - NEW that is not a public identifier, or that is already (part of) a name in the checkout's code (the two would
    merge; prose that already says NEW is fine).
Afterwards: `python -m autograder selfcheck --quick`, then the full self-check and the project's tests.
"""
from __future__ import annotations

import argparse
import ast
import keyword
import os
import pathlib
import re
import subprocess
import sys

from assignment.spec import SPEC
from autograder.otter import closure
from grader.paths import REPO

# Folders no rename touches: build outputs and caches (hidden folders, .git and .venv among them, are left too).
SKIPPED_FOLDERS = {"__pycache__", "out", "dist", "build", "node_modules"}
KEPT_AS_WRITTEN = {"CHANGELOG.md"}   # history says what was


def occurrences(name: str) -> re.Pattern:
    """`name` where it does not touch a letter or a digit: alone, or one part of a snake_case name."""
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])")


def text_files(root: pathlib.Path) -> dict[pathlib.Path, str]:
    """Every file of the checkout that is UTF-8 text, with its text; hidden folders and files and build outputs left
    out."""
    found = {}
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(f for f in folders if not (f.startswith(".") or f in SKIPPED_FOLDERS
                                                         or f.endswith(".egg-info")))
        for name in sorted(files):
            path = pathlib.Path(folder, name)
            if name.startswith(".") or name in KEPT_AS_WRITTEN or path.is_symlink():
                continue
            try:
                found[path] = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
    return found


def spans(old: str, text: str) -> list[tuple[int, int]]:
    """Where OLD is renamed in text: its occurrences, less those inside another graded name that contains it."""
    others = [occurrences(name) for name in SPEC.functions if name != old and old in name]
    kept = [(m.start(), m.end()) for other in others for m in other.finditer(text)]
    return [(m.start(), m.end()) for m in occurrences(old).finditer(text)
            if not any(start <= m.start() and m.end() <= end for start, end in kept)]


def python_source(path: pathlib.Path, text: str) -> str | None:
    """The Python code of a file: a module's text, or a notebook's code cells (closure.notebook_code); None for
    any other file."""
    if path.suffix == ".py":
        return text
    if path.suffix == ".ipynb":
        try:
            return closure.notebook_code(text)
        except (ValueError, KeyError, TypeError):   # not a notebook after all
            return None
    return None


def code_names(path: pathlib.Path, text: str) -> list[tuple[str, int, bool]]:
    """Every name this file's code binds or uses, with its line and whether it is a parameter's."""
    source = python_source(path, text)
    if source is None:
        return []
    try:
        tree = ast.parse(source)
    except SyntaxError:   # a zoo line or a payload broken on purpose: no names to keep there
        return []
    found: list[tuple[str, int, bool]] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.arg):
            found.append((node.arg, line, True))
        elif isinstance(node, ast.Name):
            found.append((node.id, line, False))
        elif isinstance(node, ast.Attribute):
            found.append((node.attr, line, False))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append((node.name, line, False))
        elif isinstance(node, ast.alias):
            found += [(part, line, False) for part in (node.asname or node.name).split(".")]
        elif isinstance(node, ast.keyword) and node.arg:
            found.append((node.arg, line, False))
    return found


def torch_names(name: str) -> list[str]:
    """Where PyTorch defines `name` too."""
    import torch  # here only: nothing else of this command needs it
    places = {"torch": torch, "torch.nn": torch.nn, "torch.nn.functional": torch.nn.functional,
              "torch.Tensor": torch.Tensor}
    return [f"{where}.{name}" for where, owner in places.items() if hasattr(owner, name)]


def refusal(old: str, new: str, files: dict[pathlib.Path, str], root: pathlib.Path) -> str | None:
    """Why this rename cannot be made, or None."""
    if old not in SPEC.functions:
        return (f"{old!r} is not a graded function of assignment/assignment.toml (those are: "
                f"{', '.join(SPEC.functions)}); the methods of {SPEC.module_class} keep the names nn.Module and the "
                "handout give them")
    if not new.isidentifier() or keyword.iskeyword(new) or new.startswith("_"):
        return f"{new!r} is not a public Python name (letters, digits and underscores, no keyword, no leading _)"
    for name, role in ((old, "the graded function"), (new, "the new name")):
        shared = torch_names(name)
        if shared:
            return (f"{role} {name!r} is also PyTorch's {shared[0]}: the calls to PyTorch's would be renamed too; "
                    "make this rename by hand")
    taken, renamed = occurrences(new), occurrences(old)
    for path, text in files.items():
        # Only code can merge: prose and strings that already say NEW (this recipe's own example) are fine.
        for name, line, parameter in code_names(path, text):
            where = f"{path.relative_to(root)}, line {line}" + (" of its code cells" if path.suffix == ".ipynb" else "")
            if taken.search(name):
                return (f"{new!r} is already part of the name {name!r} ({where}): the renamed function and it would "
                        "merge; pick another name")
            if parameter and renamed.search(name):
                return (f"{old!r} is in the name of the parameter {name!r} ({where}): renaming it would change that "
                        "signature; make this rename by hand")
    return None


def rename(old: str, new: str, root: pathlib.Path = REPO, *, dry_run: bool = False) -> dict[pathlib.Path, int]:
    """Rename OLD to NEW in every text file under root; returns each changed file and its count of replacements.
    Raises ValueError with the reason where the rename is refused (nothing is written then)."""
    files = text_files(root)
    why = refusal(old, new, files, root)
    if why:
        raise ValueError(why)
    changed = {}
    for path, text in files.items():
        found = spans(old, text)
        if not found:
            continue
        changed[path] = len(found)
        if not dry_run:
            pieces, last = [], 0
            for start, end in found:
                pieces += [text[last:start], new]
                last = end
            path.write_text("".join(pieces) + text[last:], encoding="utf-8")
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder rename", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", help="the graded function's name now")
    parser.add_argument("new", help="its new name")
    parser.add_argument("--dry-run", action="store_true", help="list the files that would change; write nothing")
    args = parser.parse_args(argv)
    try:
        changed = rename(args.old, args.new, dry_run=args.dry_run)
    except ValueError as error:
        print(f"rename: {error}", file=sys.stderr)
        return 1
    for path, count in changed.items():
        print(f"{count:4d}  {path.relative_to(REPO)}")
    verb = "would change" if args.dry_run else "changed"
    print(f"{verb} {sum(changed.values())} occurrences of {args.old} in {len(changed)} files")
    if args.dry_run:
        return 0
    # This process read the declaration before the rename: generate runs in a fresh one, which reads the new.
    proc = subprocess.run([sys.executable, "-m", "autograder", "generate"], cwd=REPO)
    if proc.returncode:
        return proc.returncode
    print("next: python -m autograder selfcheck --quick, then python -m autograder selfcheck and the project's tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
