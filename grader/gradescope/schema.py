"""Gradescope's results.json specification, as a checker: what Gradescope's harness accepts from run_autograder.

    problems(document)                 -> [Breach(field, message), ...]   breaches of Gradescope's specification
    summary(problems)                  -> a short report, a few problems per field
    total_problems(document, total)    -> [Breach, ...]   this project's rules on top: points add up exactly
                                          to `total`, scores within their maxima, execution_time present
    validate(document, total=None)     raises SchemaError listing every problem

Source: Gradescope's "Autograder Specifications" (gradescope-autograders.readthedocs.io/en/latest/specs/):
every key is optional except that a score must be given at the top or on every test; test `status` is
"passed" or "failed"; visibilities are hidden, after_due_date, after_published, visible; output formats
are text, html, simple_format, md, ansi. Keys the specification does not name are reported too, since
Gradescope drops them silently (a misspelt "visiblity" would show a hidden test).
Each Breach names its field ("tests[].status"; a project rule adds "(sum)" or "(range)"), so a caller can
tell one kind of breach from another.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
STATUSES = ("passed", "failed")
OUTPUT_FORMATS = ("text", "html", "simple_format", "md", "ansi")
LEADERBOARD_ORDERS = ("asc", "desc")

TOP_LEVEL = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
             "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
TEST = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format", "tags",
        "visibility", "extra_data"}
LEADERBOARD_ENTRY = {"name", "value", "order"}
# Sums of float points are compared to this many decimals (100.002 is wrong, 99.99999999999 is not).
POINT_DECIMALS = 6


@dataclass(frozen=True)
class Breach:
    field: str      # "score", "tests[].status", "leaderboard[].order", ...
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class SchemaError(ValueError):
    """A results.json Gradescope would reject or misread; the message lists every problem."""


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_choice(found, field, value, choices, where=""):
    if value not in choices:
        found.append(Breach(field, f"{where}{value!r} is not one of {', '.join(choices)}"))


def _check_type(found, field, value, kind, name, where=""):
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        found.append(Breach(field, f"{where}must be {name}, got {type(value).__name__} {value!r:.60}"))
        return False
    return True


def _unknown_keys(found, where, document, known):
    for key in sorted(set(document) - known):
        found.append(Breach(f"{where}{key}", "not a key of Gradescope's specification"))


def _test_problems(test, index) -> list[Breach]:
    found: list[Breach] = []
    where = f"tests[{index}] "
    if not isinstance(test, dict):
        return [Breach("tests[]", f"{where}must be an object, got {type(test).__name__}")]
    for key in sorted(set(test) - TEST):
        found.append(Breach(f"tests[].{key}", f"{where}has {key!r}, not a key of Gradescope's specification"))
    for key in ("score", "max_score"):
        if key in test and not _is_number(test[key]):
            found.append(Breach(f"tests[].{key}", f"{where}must be a finite number, got {test[key]!r}"))
    for key, choices in (("status", STATUSES), ("visibility", VISIBILITIES), ("name_format", OUTPUT_FORMATS),
                         ("output_format", OUTPUT_FORMATS)):
        if key in test:
            _check_choice(found, f"tests[].{key}", test[key], choices, where)
    for key in ("name", "output", "number"):
        if key in test:
            _check_type(found, f"tests[].{key}", test[key], str, "a string", where)
    if "tags" in test and _check_type(found, "tests[].tags", test["tags"], list, "a list of strings", where):
        for tag in test["tags"]:
            _check_type(found, "tests[].tags", tag, str, "a string", where)
    if "extra_data" in test:
        _check_type(found, "tests[].extra_data", test["extra_data"], dict, "an object", where)
    return found


def _leaderboard_problems(board) -> list[Breach]:
    found: list[Breach] = []
    if not _check_type(found, "leaderboard", board, list, "a list"):
        return found
    for entry in board:
        if not _check_type(found, "leaderboard[]", entry, dict, "an object"):
            continue
        _unknown_keys(found, "leaderboard[].", entry, LEADERBOARD_ENTRY)
        if not isinstance(entry.get("name"), str):
            found.append(Breach("leaderboard[].name", "each entry needs a string name"))
        if "value" not in entry or not (_is_number(entry["value"]) or isinstance(entry["value"], str)):
            found.append(Breach("leaderboard[].value", "each entry needs a number or string value"))
        if "order" in entry:
            _check_choice(found, "leaderboard[].order", entry["order"], LEADERBOARD_ORDERS)
    return found


def problems(document) -> list[Breach]:
    """Every breach of Gradescope's specification (empty: Gradescope accepts it as written)."""
    if not isinstance(document, dict):
        return [Breach("(document)", f"must be a JSON object, got {type(document).__name__}")]
    found: list[Breach] = []
    _unknown_keys(found, "", document, TOP_LEVEL)
    if "score" in document and not _is_number(document["score"]):
        found.append(Breach("score", f"must be a finite number, got {document['score']!r}"))
    if "execution_time" in document and not (_is_number(document["execution_time"])
                                             and document["execution_time"] >= 0):
        found.append(Breach("execution_time", f"must be seconds (a number >= 0), got {document['execution_time']!r}"))
    if "output" in document:
        _check_type(found, "output", document["output"], str, "a string")
    for key in ("output_format", "test_output_format", "test_name_format"):
        if key in document:
            _check_choice(found, key, document[key], OUTPUT_FORMATS)
    for key in ("visibility", "stdout_visibility"):
        if key in document:
            _check_choice(found, key, document[key], VISIBILITIES)
    if "extra_data" in document:
        _check_type(found, "extra_data", document["extra_data"], dict, "an object")
    tests = document.get("tests")
    if tests is not None and _check_type(found, "tests", tests, list, "a list"):
        for index, test in enumerate(tests):
            found += _test_problems(test, index)
    if "score" not in document and (not tests or any(isinstance(t, dict) and "score" not in t for t in tests)):
        found.append(Breach("score", "missing: give a top-level score or a score on every test"))
    if "leaderboard" in document:
        found += _leaderboard_problems(document["leaderboard"])
    return found


def total_problems(document: dict, total: float) -> list[Breach]:
    """This project's rules beyond the specification, for a document that meets it: the tests' maxima add
    up to exactly `total`, each score lies in [0, max_score], the top-level score is the tests' sum, and
    the run says how long it took."""
    found: list[Breach] = []
    if "execution_time" not in document:
        found.append(Breach("execution_time", "missing: Gradescope shows how long grading took from it"))
    tests = [t for t in document.get("tests") or [] if isinstance(t, dict)]
    if tests:
        possible = round(sum(t.get("max_score", 0) for t in tests), POINT_DECIMALS)
        if possible != round(total, POINT_DECIMALS):
            found.append(Breach("tests[].max_score (sum)", f"the tests' maxima add up to {possible:g}, not {total:g}"))
        earned = round(sum(t.get("score", 0) for t in tests), POINT_DECIMALS)
        if "score" in document and round(document["score"], POINT_DECIMALS) != earned:
            found.append(Breach("score (sum)", f"{document['score']:g} is not the tests' sum {earned:g}"))
    for index, test in enumerate(tests):
        if not 0 <= test.get("score", 0) <= test.get("max_score", math.inf):
            found.append(Breach("tests[].score (range)", f"tests[{index}] scores {test.get('score')} of "
                                                          f"{test.get('max_score')}"))
    return found


def summary(found: list[Breach], per_field: int = 3) -> str:
    """A short report of problems: a count and the first few of each field."""
    if not found:
        return "results.json meets Gradescope's specification"
    lines = ["results.json breaks Gradescope's specification:"]
    for field in dict.fromkeys(p.field for p in found):
        of_field = [p for p in found if p.field == field]
        lines += [f"  {p}" for p in of_field[:per_field]]
        if len(of_field) > per_field:
            lines.append(f"  {field}: ... and {len(of_field) - per_field} more")
    return "\n".join(lines)


def validate(document, total: float | None = None) -> None:
    """Raise SchemaError listing every problem; with `total`, this project's rules are checked as well."""
    found = problems(document)
    if total is not None and not found:
        found = total_problems(document, total)
    if found:
        raise SchemaError(summary(found))
