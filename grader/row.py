"""One submission's row of the gradebook, typed once: what grades.csv shows of it, and what its results file
carries (extra_data.gradebook_row) so that a resumed run, the Gradescope runtime and the class reports read it back.

    row = Row.from_json(document["extra_data"]["gradebook_row"])   # RowError for anything that is not a row
    row.to_json()                                                  # the flat object the results file holds
    columns(), lines(row)                                          # grades.csv's header, and a row's lines

A new column is a field here (and its sentence in docs/graders.md, whose list tests/test_row.py holds to
columns()): the header is the fields in order, and a frozen row is built whole where it is graded.

Its JSON is flat, as grades.csv is: part points as part1 ... partN, and "" where a number is unknown (an export's
recorded score and lateness, the memory peak), which a CSV cell shows as empty. Every reader goes through
from_json, which checks each field's type, so a damaged or foreign results file is refused in one place.
"""
from __future__ import annotations

import dataclasses
import re
import typing
from dataclasses import dataclass, field

from grader.scoring import PART_POINTS, STATUSES
from grader.submitter import Submitter

PART_KEY = re.compile(r"part(\d+)")
PART_COLUMNS = tuple(f"part{number}" for number in PART_POINTS)
# Numbers that may be unknown: None here, "" in the JSON and the CSV.
OPTIONAL_NUMBERS = ("gradescope_score", "late", "peak_memory_mib")


class RowError(ValueError):
    """The object is not a gradebook row (damaged, foreign, or from an older engine)."""


SUBMITTER_FIELDS = tuple(item.name for item in dataclasses.fields(Submitter))


def _cells(*names: str) -> dict:
    """A field grades.csv shows as these columns rather than under its own name."""
    return {"cells": names}


HIDDEN = {"cells": ()}   # a field of the results file only: the engine's bookkeeping, no column of grades.csv


@dataclass(frozen=True, kw_only=True)
class Row:
    """Built complete, never changed (dataclasses.replace makes a changed copy). Its fields in order are grades.csv's
    columns (columns()), then the results file's bookkeeping (HIDDEN)."""
    submitters: list[Submitter] = field(default_factory=list, metadata=_cells(*SUBMITTER_FIELDS))
    submission_id: str = field(default="", metadata=_cells("submission_id", "group"))   # Gradescope's, from an
    #                                                  export; group: a group submission's members, on each one's line
    submission: str = ""                           # the submission's name: file, folder, or its students' names
    score: float = 0.0                             # the raw score: what the tests gave, before any policy
    max_score: float = 0.0
    status: str                                    # one of STATUSES
    message: str = ""                              # one line, made safe for CSV and terminal
    parts: dict[int, float] = field(default_factory=dict, metadata=_cells(*PART_COLUMNS))   # part number -> points
    isolation: str = ""                            # which kernel layers held
    flags: str = ""                                # for the instructor, "; "-separated; never points
    peak_memory_mib: float | None = None           # the most one sandbox's processes held together
    late: float | None = None                      # hours after the due date (0 on time; None: unknown)
    late_penalty: float = 0.0                      # percent of the score the course's late policy deducted
    grade: float = 0.0                             # the score after the late policy: the grade (gradebook.py)
    gradescope_score: float | None = None          # what Gradescope recorded (an export)
    environment: str = ""                          # Python, torch (a GPU run: CUDA, driver, GPU) it was graded on
    slug: str = field(default="", metadata=_cells("results_file"))   # its results file: results/<slug>.json
    source: str = field(default="", metadata=HIDDEN)           # the folder or zip it was read from (real path)
    seconds: float = field(default=0.0, metadata=HIDDEN)
    engine_failure: bool = field(default=False, metadata=HIDDEN)   # the engine's fault: graded again next run
    attempts: int = field(default=1, metadata=HIDDEN)          # gradings that the engine failed, this one included
    content: str | None = field(default=None, metadata=HIDDEN)       # digest of what was graded (changes.py)
    graded_with: str | None = field(default=None, metadata=HIDDEN)   # digest of the suite and limits it was graded
    #                                                                  with

    def __post_init__(self):
        if self.status not in STATUSES:
            raise RowError(f"unknown status {self.status!r}")

    def part(self, number: int) -> float:
        return self.parts.get(number, 0.0)

    def to_json(self) -> dict:
        data = {}
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if item.name == "parts":
                data.update({f"part{number}": points for number, points in sorted(value.items())})
            elif item.name == "submitters":
                data["submitters"] = [dataclasses.asdict(person) for person in value]
            elif item.name in OPTIONAL_NUMBERS:
                data[item.name] = "" if value is None else value
            else:
                data[item.name] = value
        return data

    @classmethod
    def from_json(cls, data) -> Row:
        """The row an object holds; RowError for anything else (a missing or mistyped field, an unknown key)."""
        if type(data) is not dict:
            raise RowError("a row must be an object")
        values: dict[str, typing.Any] = {"parts": {}}
        for key, value in data.items():
            part = PART_KEY.fullmatch(key) if type(key) is str else None
            if part:
                values["parts"][int(part.group(1))] = _number(key, value)
            elif key not in FIELD_TYPES or key == "parts":
                raise RowError(f"a row has no field {str(key)[:40]!r}")
            elif key == "submitters":
                values[key] = _submitters(value)
            elif key in OPTIONAL_NUMBERS:
                values[key] = None if value in ("", None) else _number(key, value)
            else:
                values[key] = _checked(key, value, FIELD_TYPES[key])
        if "status" not in values:
            raise RowError("a row without a status")
        return cls(**values)


FIELD_TYPES = typing.get_type_hints(Row)


def columns() -> list[str]:
    """grades.csv's header: Row's fields in order, each as its columns."""
    return [name for item in dataclasses.fields(Row) for name in item.metadata.get("cells", (item.name,))]


def lines(row: Row) -> list[dict]:
    """The CSV lines of one row, by column: one per student of an export (a group: one per member, each naming the
    group), or one named after the submission."""
    people, cells = row.submitters, {**row.to_json(), "results_file": f"results/{row.slug}.json"}
    group = " & ".join(p.name or p.email or p.sid for p in people) if len(people) > 1 else ""
    students = [dataclasses.asdict(person) for person in people] or [{"name": row.submission, "sid": "", "email": ""}]
    return [{**cells, **student, "group": group} for student in students]


def _number(key: str, value) -> float:
    if type(value) not in (int, float):
        raise RowError(f"{key} is not a number")
    return float(value)


def _checked(key: str, value, kind):
    allowed = typing.get_args(kind) or (kind,)
    if float in allowed and type(value) is int:
        return float(value)
    if type(value) not in allowed:
        raise RowError(f"{key} is a {type(value).__name__}, not {kind}")
    return value


def _submitters(value) -> list[Submitter]:
    if type(value) is not list or not all(type(p) is dict for p in value):
        raise RowError("submitters is not a list of objects")
    try:
        people = [Submitter(**person) for person in value]
    except TypeError as error:
        raise RowError(f"a submitter: {error}") from None
    if not all(type(text) is str for person in people for text in dataclasses.astuple(person)):
        raise RowError("a submitter's fields are not text")
    return people


def of_results(document) -> Row | None:
    """The row a results document carries; None where it carries none or a malformed one."""
    try:
        return Row.from_json(((document or {}).get("extra_data") or {}).get("gradebook_row"))
    except (RowError, AttributeError):
        return None
