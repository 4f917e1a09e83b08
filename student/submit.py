"""Check your work and write the zip to upload to Gradescope.

    python -m student.submit                 # public checks, stub warnings, then attention-submission.zip
    python -m student.submit --out my.zip    # another file name
    python -m student.submit --no-checks     # only write the zip

The zip holds this `student/` package (the only thing graded) and your notebook
attention.ipynb. Upload it as it is: Gradescope and the batch grader both read it.
Exit status 0 when the zip was written, even if some checks fail (partial work
earns partial points); 1 when nothing could be written.
"""
import argparse
import ast
import pathlib
import sys
import zipfile

from student.parts import GRADER_PACKAGES, is_stub_message

PACKAGE_DIR = pathlib.Path(__file__).resolve().parent
WORK_DIR = PACKAGE_DIR.parent
NOTEBOOK = "attention.ipynb"
DEFAULT_ZIP = "attention-submission.zip"
SKIPPED = {"__pycache__", ".pytest_cache", ".hypothesis", ".ipynb_checkpoints"}
# A submission far larger than the code it should hold is almost certainly a mistake (data, checkpoints).
SIZE_WARNING_BYTES = 5 * 1024 * 1024

# Otter needs one notebook in a submission; this stands in when yours is not next to student/.
PLACEHOLDER_NOTEBOOK = """{"cells": [{"cell_type": "markdown", "metadata": {},
   "source": ["attention.ipynb was not found when this submission was made; only student/ is graded."]}],
 "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
 "nbformat": 4, "nbformat_minor": 4}
"""


def _is_stub_body(body) -> bool:
    """True for a function body that still holds the stub's own
    `raise NotImplementedError("Part N: <name> is not implemented yet")` line."""
    for statement in body:
        call = statement.exc if isinstance(statement, ast.Raise) else None
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "NotImplementedError"
                and call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)
                and is_stub_message(call.args[0].value)):
            return True
    return False


def _stubbed_functions(node, prefix: str):
    """Qualified names (Class.method) of the functions under node that are still stubs."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            yield from _stubbed_functions(child, f"{prefix}{child.name}.")
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_stub_body(child.body):
            yield f"{prefix}{child.name}"


def unimplemented(package_dir: pathlib.Path = PACKAGE_DIR) -> list[str]:
    """module.function names still holding the stub's `raise NotImplementedError`."""
    found = []
    for path in sorted(package_dir.glob("*.py")):
        try:
            tree = ast.parse(path.read_text(), filename=str(path))
        except SyntaxError as error:
            found.append(f"{path.name}: does not parse ({error.msg}, line {error.lineno})")
            continue
        found += [f"{path.stem}.{name}" for name in _stubbed_functions(tree, "")]
    return found


def missing_on_the_grader(package_dir: pathlib.Path = PACKAGE_DIR) -> list[str]:
    """'masking.py imports einops': each import of student/ (its tests aside) that the grader cannot satisfy
    (neither Python's standard library, nor your own package, nor one of GRADER_PACKAGES)."""
    found = []
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir)
        if relative.parts[0] == "tests" or any(part in SKIPPED for part in relative.parts):
            continue
        try:
            tree = ast.parse(path.read_text(), filename=str(path))
        except SyntaxError:
            continue   # unimplemented() reports it
        modules = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        modules |= {node.module for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module}
        for top in sorted({module.split(".")[0] for module in modules}):
            if top not in sys.stdlib_module_names and top != "student" and top not in GRADER_PACKAGES:
                found.append(f"{relative.as_posix()} imports {top}")
    return found


def _package_files(package_dir: pathlib.Path):
    for path in sorted(package_dir.rglob("*")):
        relative = path.relative_to(package_dir)
        if any(part in SKIPPED for part in relative.parts) or path.suffix == ".pyc":
            continue
        if path.is_symlink():
            print(f"  skipped {relative}: a symbolic link (copy the file itself into student/)")
            continue
        if path.is_file():
            yield path, relative


def write_submission_zip(zip_path: pathlib.Path, package_dir: pathlib.Path = PACKAGE_DIR,
                         notebook: pathlib.Path | None = None) -> pathlib.Path:
    """Write student/ and the notebook (or a placeholder when it is missing) into zip_path."""
    notebook = notebook if notebook is not None else package_dir.parent / NOTEBOOK
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, relative in _package_files(package_dir):
            zf.write(path, f"student/{relative.as_posix()}")
        if notebook.is_file():
            zf.write(notebook, NOTEBOOK)
        else:
            print(f"  note: {notebook} not found; the zip holds a placeholder notebook (only student/ is graded)")
            zf.writestr(NOTEBOOK, PLACEHOLDER_NOTEBOOK)
    return zip_path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m student.submit", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=pathlib.Path, default=WORK_DIR / DEFAULT_ZIP,
                        help=f"where to write the zip (default: {DEFAULT_ZIP} next to student/)")
    parser.add_argument("--no-checks", action="store_true", help="skip the public checks")
    args = parser.parse_args(argv)

    if not args.no_checks:
        from student.check import run_checks
        from student.parts import PARTS
        print("Running the public checks ...")
        all_passed, table = run_checks(sorted(PARTS))
        print(table)
        print("All public checks pass.\n" if all_passed else
              "Some public checks fail (you can still submit; they are worth no points, but the hidden tests "
              "that give the points check the same functions).\n")

    stubs = unimplemented()
    if stubs:
        print("WARNING: still not implemented (they score 0):\n  " + "\n  ".join(stubs) + "\n")
    missing = missing_on_the_grader()
    if missing:
        print("WARNING: the grader cannot import these, so the functions of those files would score 0 there "
              f"(it has Python's standard library and {', '.join(GRADER_PACKAGES)}):\n  " + "\n  ".join(missing)
              + "\n")

    try:
        zip_path = write_submission_zip(args.out.resolve())
    except OSError as error:
        print(f"could not write {args.out}: {error}", file=sys.stderr)
        return 1
    size = zip_path.stat().st_size
    print(f"Wrote {zip_path} ({size / 1024:.0f} KiB). Upload this file to Gradescope.")
    if size > SIZE_WARNING_BYTES:
        print(f"WARNING: the zip is {size / 2**20:.1f} MiB: did data or checkpoints end up in student/?")
    return 0


if __name__ == "__main__":
    sys.exit(main())
