"""What the engine must give each adversarial submission, and the check of a graded batch against it."""
from __future__ import annotations

import csv
import json
import os
import pathlib
from dataclasses import dataclass

from grading_tests.scoring import PART_POINTS

PARTS = tuple(PART_POINTS)
EPSILON = 1e-6


@dataclass(frozen=True)
class Expectation:
    name: str                       # the submission's row name (folder name, or zip name without .zip)
    kind: str                       # "control", "cheat", "abuse" or "input"
    status: str                     # graded / error / timeout
    why: str
    score: float | None = None      # the exact total, when it is known up front
    baseline: str | None = None     # compare part by part with this row of the same batch ...
    lost_parts: tuple[int, ...] = ()  # ... these parts score lower than there, every other part the same
    message: str = ""               # the row's message contains this (case-insensitive)
    forbidden_paths: tuple[str, ...] = ()   # must not exist after grading: a payload ran where it must not
    forbidden_process: str = ""     # no process may still run with this command line after grading
    max_result_bytes: int = 1 << 20  # the results file stays small whatever the submission printed
    forbidden_output: tuple[str, ...] = ()   # its feedback (what it printed) must not contain these

    def problems(self, row: dict | None, baseline_row: dict | None, result: pathlib.Path) -> list[str]:
        if row is None:
            return [f"{self.name}: no row in grades.csv"]
        found = []
        if row["status"] != self.status:
            found.append(f"status {row['status']!r}, expected {self.status!r} (message: {row['message']})")
        if self.score is not None and abs(row["score"] - self.score) > EPSILON:
            found.append(f"score {row['score']:g}, expected exactly {self.score:g}")
        if self.message and self.message.lower() not in row["message"].lower():
            found.append(f"message {row['message']!r} does not mention {self.message!r}")
        if self.baseline is not None:
            found += _compare_parts(row, baseline_row, self.baseline, self.lost_parts)
        if not result.exists():
            found.append("no results file")
        elif result.stat().st_size > self.max_result_bytes:
            found.append(f"results file of {result.stat().st_size} bytes (limit {self.max_result_bytes})")
        else:
            output = json.loads(result.read_text()).get("output", "")
            found += [f"its feedback contains {text!r}" for text in self.forbidden_output if text in output]
        found += [f"{path} exists: the payload ran" for path in self.forbidden_paths if os.path.lexists(path)]
        if self.forbidden_process and processes_running(self.forbidden_process):
            found.append(f"a process {self.forbidden_process!r} outlived its sandbox")
        return [f"{self.name}: {problem}" for problem in found]


def _compare_parts(row, baseline_row, baseline: str, lost: tuple[int, ...]) -> list[str]:
    if baseline_row is None:
        return [f"baseline row {baseline!r} missing"]
    found = []
    for part in PARTS:
        mine, theirs = row[f"part{part}"], baseline_row[f"part{part}"]
        if part in lost and not mine < theirs - EPSILON:
            found.append(f"part {part}: {mine:g}, expected less than {baseline}'s {theirs:g}")
        if part not in lost and abs(mine - theirs) > EPSILON:
            found.append(f"part {part}: {mine:g}, expected {baseline}'s {theirs:g} (only parts {lost} may differ)")
    return found


def read_rows(out) -> dict[str, dict]:
    """grades.csv as name -> row, numbers as floats."""
    with open(pathlib.Path(out) / "grades.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    numeric = {"score", "max_score", *(f"part{p}" for p in PARTS)}
    return {row["submission"]: {k: float(v) if k in numeric else v for k, v in row.items()} for row in rows}


def processes_running(command_line: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if handle.read().replace(b"\0", b" ").decode(errors="replace").strip() == command_line:
                    found.append(int(pid))
        except OSError:
            continue
    return found


def verify(expectations: list[Expectation], out) -> list[str]:
    """Every way the graded batch in out/ departs from the expectations (empty: all as expected)."""
    out = pathlib.Path(out)
    rows = read_rows(out)
    problems = []
    for expectation in expectations:
        baseline = rows.get(expectation.baseline) if expectation.baseline else None
        problems += expectation.problems(rows.get(expectation.name), baseline,
                                         out / "results" / f"{expectation.name}.json")
    for path in sorted((out / "results").iterdir()) + [out / "grades.csv"]:
        if "FORGED-BY-A-SUBMISSION" in path.read_text(errors="replace"):
            problems.append(f"{path} was forged by a submission")
        if path.suffix == ".json" and "extra_data" not in json.loads(path.read_text()):
            problems.append(f"{path} was not written by the engine")
    return problems
