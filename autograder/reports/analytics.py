"""What the class got wrong: per hidden test, how many passed, the points the class lost there and why.

    stats = write(out, rows)           # out/tests.csv and out/tests.png, from out/results/<slug>.json
    most_failed(stats, 5)              # the tests the most submissions failed, for the closing table

A row whose status is "error" never reached the suite: it is no evidence about any test and is left
out (its zeros would read as "nobody understood Part 1"). Failure messages are grouped by their hint
(the suite's "Hint: ..." names the likely mistake), else by the message with its numbers taken out,
so that one mistake counts once however many shapes it was tried on.
"""
from __future__ import annotations

import csv
import io
import json
import pathlib
import re
from collections import Counter
from dataclasses import dataclass, field

from autograder.reports import chart
from grader.row import Row
from grader.run.files import atomic_write
from grader.sanitize import csv_cell
from grader.scoring import entry_part, entry_test

# 3, 0.5, 1e-05; not float32, nor a part's number ("Part 3" names where to look, the same in every submission)
NUMBER = re.compile(r"(?<![\w.])(?<!Part )-?\d+(?:\.\d+)?(?:e-?\d+)?(?![\w.])")
REASON_CHARS = 160
SHOWN_REASONS = 3
COLUMNS = ("part", "test", "function", "points", "graded", "passed", "pass_rate", "points_lost", "top_failures")


@dataclass
class TestStat:
    part: int
    test: str                  # the test's id, parameters included
    points: float              # what it is worth
    graded: int = 0            # submissions it ran for
    passed: int = 0
    points_lost: float = 0.0   # over the class
    reasons: Counter = field(default_factory=Counter)
    failing: set[str] = field(default_factory=set)   # the submissions (slugs) that failed it

    @property
    def function(self) -> str:
        return self.test.split("[", 1)[0]

    @property
    def pass_rate(self) -> float:
        return 100.0 * self.passed / self.graded if self.graded else 0.0

    @property
    def failed(self) -> int:
        return self.graded - self.passed


def reason(message: str) -> str:
    """A failure's group: its hint if it has one, else its first sentence with the numbers taken out."""
    if "Hint: " in message:
        return _cut("Hint: " + message.rsplit("Hint: ", 1)[1].strip())
    return _cut(NUMBER.sub("#", message.split(". ", 1)[0]).strip())


def _cut(text: str, limit: int = REASON_CHARS) -> str:
    """text within limit characters, cut between words (an ellipsis marks the cut)."""
    if len(text) <= limit:
        return text
    return (text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit - 1]) + "…"


def class_tests(out: pathlib.Path, rows: list[Row]) -> list[TestStat]:
    """One TestStat per hidden test that ran for any graded (or timed-out) submission, in the suite's order."""
    stats: dict[tuple[int, str], TestStat] = {}   # (part, test id): parts share test names
    for row in rows:
        if row.status == "error":
            continue
        try:
            document = json.loads((out / "results" / f"{row.slug}.json").read_text())
        except (OSError, ValueError):
            continue
        for test in document.get("tests", []):
            part, name = entry_part(test), entry_test(test)
            if part is None or name is None or not test.get("max_score"):
                continue   # the summary, the "not run" note, the flags, a whole part's entry: no test's
            stat = stats.setdefault((part, name), TestStat(part, name, float(test["max_score"])))
            stat.graded += 1
            if test.get("status") == "passed":
                stat.passed += 1
            else:
                stat.reasons[reason(str(test.get("output", "")))] += 1
                stat.failing.add(row.slug)
            stat.points_lost += max(0.0, float(test["max_score"]) - float(test.get("score") or 0.0))
    return list(stats.values())


def write_tests_csv(out: pathlib.Path, stats: list[TestStat]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for stat in stats:
        top = "; ".join(f"{text} ({count})" for text, count in stat.reasons.most_common(SHOWN_REASONS))
        writer.writerow([stat.part, csv_cell(stat.test), csv_cell(stat.function), round(stat.points, 4), stat.graded,
                         stat.passed, round(stat.pass_rate, 1), round(stat.points_lost, 4), csv_cell(top)])
    atomic_write(out / "tests.csv", buffer.getvalue())


def most_failed(stats: list[TestStat], count: int = 5) -> list[TestStat]:
    """The test functions the most submissions failed, a parametrized test's cases together as tests.png draws
    them (a submission failing any case counts once), named "test_x (N cases)"; ties: the one that cost the class
    more points first."""
    functions = []
    for (part, function), cases in _by_function(stats).items():
        failing = set().union(*(case.failing for case in cases))
        graded = max(len(failing), *(case.graded for case in cases))   # a timed-out run ran only some cases
        name = function if len(cases) == 1 else f"{function} ({len(cases)} cases)"
        functions.append(TestStat(part, name, sum(case.points for case in cases), graded, graded - len(failing),
                                  sum(case.points_lost for case in cases), failing=failing))
    failed = [stat for stat in functions if stat.failed]
    return sorted(failed, key=lambda s: (-s.failed, -s.points_lost, s.part, s.test))[:count]


def _by_function(stats: list[TestStat]) -> dict[tuple[int, str], list[TestStat]]:
    """(part, test function) -> its cases: a parametrized test is one idea."""
    grouped: dict[tuple[int, str], list[TestStat]] = {}
    for stat in stats:
        grouped.setdefault((stat.part, stat.function), []).append(stat)
    return grouped


def by_function(stats: list[TestStat]) -> list[tuple[int, str, float, int]]:
    """(part, test function, pass rate over all its cases, submissions) per test function: the picture's bars,
    grouped by part, the weakest first within each."""
    bars = []
    for (part, function), cases in _by_function(stats).items():
        runs = sum(case.graded for case in cases)
        rate = 100.0 * sum(case.passed for case in cases) / runs if runs else 0.0
        bars.append((part, function, rate, max(case.graded for case in cases)))
    return sorted(bars, key=lambda bar: (bar[0], bar[2], bar[1]))


def write(out: pathlib.Path, rows: list[Row], picture: bool = True) -> list[TestStat]:
    """out/tests.csv and (picture) out/tests.png for these rows; returns the statistics."""
    stats = class_tests(out, rows)
    write_tests_csv(out, stats)
    if picture:
        # The bars count the submissions each test ran for; the title, the most any test ran for (a timed-out run
        # ran only some tests, a row without a results file none), so no bar says more than the title.
        counted = max((stat.graded for stat in stats), default=0)
        chart.write(out, "tests.png", chart.draw_tests, by_function(stats),
                    f"Pass rate per hidden test ({counted} submissions with test results), weakest first")
    return stats
