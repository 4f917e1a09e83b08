"""Run the public checks and print one line per part.

    python -m student.check            # every part
    python -m student.check --part 3   # Part 3 only
    python -m student.check -v         # pytest's own report too

Exit status 0 only when every selected check passes.
"""
import argparse
import pathlib
import re
import sys

import pytest

from student.parts import PARTS

TESTS_DIR = pathlib.Path(__file__).resolve().parent / "tests"


class PartTally:
    """A pytest plugin that counts passed tests and keeps the first failure of each part."""

    def __init__(self):
        self.passed = {number: 0 for number in PARTS}
        self.total = {number: 0 for number in PARTS}
        self.first_failure: dict[int, str] = {}
        self.unloadable: dict[int, str] = {}   # part -> why its checks could not even be loaded

    def pytest_collectreport(self, report):
        # A check file that cannot be imported (a syntax error in the module it tests, say).
        found = re.search(r"test_part(\d+)_", report.nodeid)
        if report.failed and found and int(found.group(1)) in PARTS:
            self.unloadable.setdefault(int(found.group(1)), collection_reason(report))

    @staticmethod
    def _part(item) -> int | None:
        for number in PARTS:
            if item.get_closest_marker(f"part{number}"):
                return number
        return None

    def pytest_runtest_makereport(self, item, call):
        # The test's own outcome is decided in the "call" phase; a setup error also counts.
        if call.when == "call" or (call.when == "setup" and call.excinfo is not None):
            part = self._part(item)
            if part is None:
                return
            self.total[part] += 1
            if call.excinfo is None:
                self.passed[part] += 1
            elif part not in self.first_failure:
                self.first_failure[part] = f"{item.name}: {plain_reason(call.excinfo)}"


def plain_reason(excinfo) -> str:
    """One line that says why a check failed, without a traceback."""
    error = excinfo.value
    if isinstance(error, NotImplementedError):
        return f"not implemented yet ({error})"
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    if isinstance(error, AssertionError):
        return first or "assertion failed"
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def collection_reason(report) -> str:
    """The error line of a failed import, e.g. 'SyntaxError: ... (heads.py, line 3)'."""
    text = str(report.longrepr)
    errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    where = re.findall(r'File "[^"]*?([\w]+\.py)", line (\d+)', text)
    reason = errors[-1] if errors else text.strip().splitlines()[-1]
    return f"could not load the checks: {reason}" + (f" ({where[-1][0]}, line {where[-1][1]})" if where else "")


def render_table(tally: PartTally, parts) -> str:
    rows = [("Part", "Title", "Passed", "First failure")]
    for number in parts:
        title = PARTS[number][0]
        if number in tally.unloadable:
            rows.append((str(number), title, "0/?", tally.unloadable[number]))
            continue
        if tally.total[number] == 0:
            rows.append((str(number), title, "-", "no check ran"))
            continue
        done = f"{tally.passed[number]}/{tally.total[number]}"
        rows.append((str(number), title, done, tally.first_failure.get(number, "")))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = []
    for row in rows:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths)) + "  " + row[3])
    lines.insert(1, "-" * min(100, len(lines[0]) + 20))
    return "\n".join(lines)


def run_checks(parts, verbose=False) -> tuple[bool, str]:
    """Run the public tests of the given parts; returns (all passed, table)."""
    tally = PartTally()
    marker = " or ".join(f"part{number}" for number in parts)
    args = [str(TESTS_DIR), "-m", marker, "-p", "no:cacheprovider", "--continue-on-collection-errors"]
    args += ["-q"] if verbose else ["-p", "no:terminal"]
    exit_code = pytest.main(args, plugins=[tally])
    if exit_code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        raise SystemExit(f"the checks could not run (pytest exit code {int(exit_code)})")
    all_passed = all(tally.total[n] > 0 and tally.passed[n] == tally.total[n] and n not in tally.unloadable
                     for n in parts)
    return all_passed, render_table(tally, parts)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m student.check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", type=int, action="append", choices=sorted(PARTS),
                        help="check only this part (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true", help="also show pytest's report")
    args = parser.parse_args(argv)
    parts = sorted(set(args.part)) if args.part else sorted(PARTS)
    all_passed, table = run_checks(parts, verbose=args.verbose)
    print(table)
    print("\nAll selected checks pass." if all_passed else
          "\nSome checks fail: the hidden grading tests check much more than these, so fix these first.")
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
