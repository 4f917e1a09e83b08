"""Run the public checks and print one line per part.

    python -m student.check            # every part, and your own tests in student/tests/
    python -m student.check --part 3   # Part 3 only
    python -m student.check -v         # pytest's own report too

Without --part it first names the PyTorch installed, and how to switch to the small CPU build
where pip installed the large CUDA one (which works all the same). Each row says how many
checks of the part pass and why the first failing one fails. "not implemented yet" means the
function still raises its stub's NotImplementedError; any other error is shown as the error
it is, with the function and line of your code it came from.
Your own tests in student/tests/ are run too: a test with a part marker
(`@pytest.mark.part3`) counts in that part's row, one without in the row "your own checks".
Exit status 0 only when every selected check passes.
"""
import argparse
import pathlib
import re
import subprocess
import sys

import pytest

from student import torch_build
from student.parts import PARTS, is_stub_error, part_of

PACKAGE_DIR = pathlib.Path(__file__).resolve().parent
TESTS_DIR = PACKAGE_DIR / "tests"
GRADED = {name for _title, names in PARTS.values() for name in names}
YOUR_CODE, CHECKS_CODE = str(PACKAGE_DIR) + "/", str(TESTS_DIR) + "/"   # where a called function's code lives
OWN = "own"   # the row of the student's own tests that carry no part marker
OWN_TITLE = "your own checks"


class PartTally:
    """A pytest plugin that keeps the selected checks, counts passes and keeps the first failure of each row."""

    def __init__(self, parts, include_own: bool):
        self.parts, self.include_own = list(parts), include_own
        rows = [*self.parts, OWN] if include_own else self.parts
        self.passed = dict.fromkeys(rows, 0)
        self.total = dict.fromkeys(rows, 0)
        self.first_failure: dict = {}
        self.unloadable: dict = {}   # row -> why its checks could not even be loaded
        self.failing_calls: list = []   # (part, the graded functions it called) of each failing check
        self._called: set = set()       # the graded functions the running check called

    @staticmethod
    def _part(item) -> int | None:
        for number in PARTS:
            if item.get_closest_marker(f"part{number}"):
                return number
        return None

    def _row(self, item):
        part = self._part(item)
        if part is None:
            return OWN if self.include_own else None
        return part if part in self.parts else None

    def pytest_collection_modifyitems(self, config, items):
        kept = [item for item in items if self._row(item) is not None]
        dropped = [item for item in items if self._row(item) is None]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept

    def pytest_collectreport(self, report):
        # A check file that cannot be imported (a syntax error in the module it tests, say).
        if not report.failed:
            return
        found = re.search(r"test_part(\d+)_", report.nodeid)
        if found and int(found.group(1)) in PARTS:
            part = int(found.group(1))
            if part in self.parts:
                self.unloadable.setdefault(part, collection_reason(report))
        elif self.include_own:
            name = pathlib.PurePath(report.nodeid.split("::")[0]).name or report.nodeid
            self.unloadable.setdefault(OWN, f"{name}: {collection_reason(report)}")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        """Note which graded functions of yours the check calls (a profile hook sees every call)."""
        self._called = set()
        sys.setprofile(self._note_call)
        try:
            yield
        finally:
            sys.setprofile(None)

    def _note_call(self, frame, event, _arg):
        if event == "call":
            code = frame.f_code
            name = getattr(code, "co_qualname", code.co_name)   # co_qualname: Python 3.11 and later
            if name in GRADED and code.co_filename.startswith(YOUR_CODE) and not code.co_filename.startswith(
                    CHECKS_CODE):
                self._called.add(name)

    def pytest_runtest_makereport(self, item, call):
        # The test's own outcome is decided in the "call" phase; a setup error also counts.
        if call.when == "call" or (call.when == "setup" and call.excinfo is not None):
            row = self._row(item)
            if row is None:
                return
            self.total[row] += 1
            if call.excinfo is None:
                self.passed[row] += 1
            else:
                self.first_failure.setdefault(row, f"{item.name}: {plain_reason(call.excinfo)}")
                if row != OWN:
                    self.failing_calls.append((row, self._called))

    def failing(self, row) -> bool:
        """A part fails when a check fails, cannot load or none ran; the own row only when one fails."""
        if row in self.unloadable or self.passed[row] < self.total[row]:
            return True
        return row != OWN and self.total[row] == 0

    def shown_rows(self) -> list:
        """Every selected part, and the own row when there is something to say."""
        return [row for row in self.total if row != OWN or self.total[row] or row in self.unloadable]


def plain_reason(excinfo) -> str:
    """One line that says why a check failed, without a traceback."""
    error = excinfo.value
    if is_stub_error(error):
        return f"not implemented yet ({error})"
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    if isinstance(error, AssertionError):
        return first or "assertion failed"
    reason = f"{type(error).__name__}: {first}" if first else type(error).__name__
    return reason + where_in_your_code(excinfo)


def where_in_your_code(excinfo) -> str:
    """' (in split_heads, heads.py line 20)': the last frame of the traceback inside the student package."""
    for entry in reversed(excinfo.traceback):
        path = pathlib.Path(str(entry.path)).resolve()
        if path.is_relative_to(PACKAGE_DIR) and not path.is_relative_to(TESTS_DIR):
            return f" (in {entry.name}, {path.relative_to(PACKAGE_DIR).as_posix()} line {entry.lineno + 1})"
    return ""


def collection_reason(report) -> str:
    """The error line of a failed import, e.g. 'SyntaxError: ... (heads.py, line 3)'."""
    text = str(report.longrepr)
    errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    where = re.findall(r'File "[^"]*?([\w]+\.py)", line (\d+)', text)
    reason = errors[-1] if errors else text.strip().splitlines()[-1]
    return f"could not load the checks: {reason}" + (f" ({where[-1][0]}, line {where[-1][1]})" if where else "")


def render_table(tally: PartTally) -> str:
    rows = [("Part", "Title", "Passed", "First failure")]
    for row in tally.shown_rows():
        number, title = ("-", OWN_TITLE) if row == OWN else (str(row), PARTS[row][0])
        if row in tally.unloadable:
            rows.append((number, title, "0/?", tally.unloadable[row]))
        elif tally.total[row] == 0:
            rows.append((number, title, "-", "no check ran"))
        else:
            rows.append((number, title, f"{tally.passed[row]}/{tally.total[row]}", tally.first_failure.get(row, "")))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)) + "  " + row[3]
             for row in rows]
    lines.insert(1, "-" * min(100, len(lines[0]) + 20))
    return "\n".join(lines + fix_first_notes(tally))


def fix_first_notes(tally: PartTally) -> list[str]:
    """Name the functions of earlier parts to fix first, where a written part's failing checks called them.

    Part by part, the failing checks that call the fewest functions first: a function fails on its own when a
    failing check of its part called it and nothing already found failing on its own (so a check that reaches a
    broken causal_mask through scaled_dot_product_attention and apply_mask blames causal_mask alone, where a check
    of causal_mask alone fails too). A part's other failing checks, those that called an earlier function failing
    on its own and none of the part's own failing ones, are that earlier function's doing: the note names it.
    """
    on_its_own: set = set()
    notes = []
    for part in tally.parts:
        checks = [called for row, called in tally.failing_calls if row == part]
        mine: set = set()
        for called in sorted(checks, key=len):
            if not called & (on_its_own | mine):
                mine |= {name for name in called if part_of(name) == part}
        on_its_own |= mine
        earlier = sorted({(part_of(name), name) for called in checks if not called & mine
                          for name in called & on_its_own if part_of(name) < part})
        if earlier and "not implemented yet" not in tally.first_failure.get(part, ""):
            named = [f"{name} (Part {number})" for number, name in earlier]
            names = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
            one = len(earlier) == 1
            notes.append(f"Part {part}'s failing checks call your {names}, which fail{'s' * one} "
                         f"{'its' if one else 'their'} own checks: fix {'that' if one else 'those'} first.")
    return ["", *notes] if notes else []


def run_checks(parts, verbose=False) -> tuple[bool, str]:
    """Run the public tests of the given parts (and the student's own unmarked tests when every part is
    selected); returns (all passed, table)."""
    parts = sorted(parts)
    tally = PartTally(parts, include_own=parts == sorted(PARTS))
    # -o addopts=: options a pytest configuration around the folder adds (-x, -ra) would change the counts.
    args = [str(TESTS_DIR), "-o", "addopts=", "-p", "no:cacheprovider", "--continue-on-collection-errors"]
    args += ["-q"] if verbose else ["-p", "no:terminal"]
    exit_code = pytest.main(args, plugins=[tally])
    if exit_code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        raise SystemExit(f"the checks could not run (pytest exit code {int(exit_code)})")
    return not any(tally.failing(row) for row in tally.total), render_table(tally)


def check_in_fresh_process(*parts: int) -> str:
    """What `python -m student.check --part N ...` prints, run in a new Python process so that it
    sees your files as last saved (the notebook's check() cells), with whatever went to stderr."""
    command = [sys.executable, "-m", "student.check", *(f"--part={part}" for part in parts)]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=PACKAGE_DIR.parent)
    text = proc.stdout.rstrip()
    if proc.stderr.strip():
        text += f"\n\nPrinted on stderr (exit status {proc.returncode}):\n{proc.stderr.rstrip()}"
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m student.check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", type=int, action="append", choices=sorted(PARTS),
                        help="check only this part (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true", help="also show pytest's report")
    args = parser.parse_args(argv)
    parts = sorted(set(args.part)) if args.part else sorted(PARTS)
    if not args.part:   # the first check of an install (the notebook's check(N) cells pass --part)
        print(torch_build.describe() + "\n")   # any build passes: a CUDA one is only large
    all_passed, table = run_checks(parts, verbose=args.verbose)
    print(table)
    print("\nAll selected checks pass." if all_passed else
          "\nSome checks fail: the hidden grading tests check much more than these, so fix these first.")
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
