"""What the engine must give each adversarial submission, and the check of a graded batch against it."""
from __future__ import annotations

import csv
import json
import os
import pathlib
from dataclasses import dataclass

from grader.contain import cleanup
from grader.row import RowError
from grader.run import gradebook
from grader.sanitize import FORMULA_STARTS
from grader.scoring import PART_POINTS

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
    kept_paths: tuple[str, ...] = ()         # must still exist after grading (bait the attack tried to destroy)
    forbidden_ipc_key: int | None = None     # no System V IPC object with this key may exist after grading
    forbidden_queue: str = ""                # no POSIX message queue of this name may exist after grading
    flag: str = ""                           # the row's flags contain this (case-insensitive)
    defence: str = ""                        # the isolation layers that stop it (switched off: it succeeds)
    no_better_than: str | None = None        # its total is at most this row's (a cheat against its honest twin)
    secret: str = ""                         # appears nowhere: its row, its flags, its results file
    flag_free: bool = False                  # its row has no flag at all (a flag must mean the student did it)
    needs_layer: str = ""                    # the layers that can stop it ("mnt,landlock": either): where the
                                             # run's isolation line says the kernel gave none, only honesty is asked
    unsaid_at_once: tuple[str, ...] = ()     # its row's message, which students read at once, holds none of these
    absent: bool = False                     # no row at all: the path holds no submission

    def problems(self, row: dict | None, baseline_row: dict | None, result: pathlib.Path,
                 twin_row: dict | None = None) -> list[str]:
        if self.absent:
            return [] if row is None else [f"{self.name}: a row in grades.csv, though it holds no submission"]
        if row is None:
            return [f"{self.name}: no row in grades.csv"]
        isolation = row.get("isolation", "")
        layers = [layer for layer in self.needs_layer.split(",") if layer]
        if layers and all(f"no {layer} (" in isolation and f"no {layer} (switched off" not in isolation
                          for layer in layers):
            return []   # the row says the kernel would give none of the layers: nothing else can be promised
        text = result.read_text(errors="replace") if result.exists() else None
        found = []
        if row["status"] != self.status:
            found.append(f"status {row['status']!r}, expected {self.status!r} (message: {row['message']})")
        if self.score is not None and abs(row["score"] - self.score) > EPSILON:
            found.append(f"score {row['score']:g}, expected exactly {self.score:g}")
        if self.message and self.message.lower() not in row["message"].lower():
            found.append(f"message {row['message']!r} does not mention {self.message!r}")
        found += [f"message {row['message']!r} tells {text!r} at once" for text in self.unsaid_at_once
                  if text in row["message"]]
        if self.flag and self.flag.lower() not in row.get("flags", "").lower():
            found.append(f"flags {row.get('flags', '')!r} do not mention {self.flag!r}")
        if self.flag_free and row.get("flags"):
            found.append(f"flagged although the student did nothing: {row['flags']!r}")
        if self.secret and any(self.secret.lower() in str(row.get(key, "")).lower() for key in ("message", "flags")):
            found.append(f"its row contains {self.secret!r}")
        if self.secret and text is not None and self.secret.lower() in text.lower():
            found.append(f"its results file contains {self.secret!r}")
        if self.baseline is not None:
            found += _compare_parts(row, baseline_row, self.baseline, self.lost_parts)
        if self.no_better_than is not None:
            if twin_row is None:
                found.append(f"row {self.no_better_than!r} missing")
            elif row["score"] > twin_row["score"] + EPSILON:
                found.append(f"score {row['score']:g}, more than {self.no_better_than}'s {twin_row['score']:g}")
        if text is None:
            found.append("no results file")
        elif result.stat().st_size > self.max_result_bytes:
            found.append(f"results file of {result.stat().st_size} bytes (limit {self.max_result_bytes})")
        else:
            output = json.loads(text).get("output", "")
            found += [f"its feedback contains {text!r}" for text in self.forbidden_output if text in output]
        found += [f"{path} exists: the payload ran" for path in self.forbidden_paths if os.path.lexists(path)]
        found += [f"{path} is gone: the payload destroyed it" for path in self.kept_paths if not os.path.lexists(path)]
        if self.forbidden_ipc_key is not None and ipc_objects_with_key(self.forbidden_ipc_key):
            found.append(f"System V IPC objects with key {self.forbidden_ipc_key} outlived the sandbox")
        if self.forbidden_queue and posix_queue_exists(self.forbidden_queue):
            found.append(f"the POSIX message queue {self.forbidden_queue} outlived the sandbox")
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
    """grades.csv as name -> row, numbers as floats (a name the CSV quoted against formulas, unquoted)."""
    with open(pathlib.Path(out) / "grades.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    numeric = {"score", "max_score", *(f"part{p}" for p in PARTS)}
    return {_unquoted(row["submission"]): {k: float(v) if k in numeric else v for k, v in row.items()} for row in rows}


def _unquoted(name: str) -> str:
    return name[1:] if name.startswith("'") and name[1:2] in FORMULA_STARTS else name


def result_files(out) -> dict[str, pathlib.Path]:
    """Submission name -> its results file (named by a slug that need not be its name)."""
    found = {}
    for path in sorted((pathlib.Path(out) / "results").glob("*.json")):
        try:
            row = gradebook.read_row(path)
        except RowError:
            continue
        found[row.submission] = path
    return found


def ipc_objects_with_key(key: int) -> list[str]:
    """System V shared-memory segments, queues and semaphore sets with this key, as the host sees them."""
    return [f"{found.kind} {found.ident}" for found in cleanup.sysv_ipc_objects() if found.key == key]


def posix_queue_exists(name: str, *, remove: bool = False) -> bool:
    """Whether a POSIX message queue of this name exists on the host (remove: and delete it)."""
    import ctypes
    import ctypes.util

    try:
        rt = ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1", use_errno=True)
    except OSError:
        return False
    fd = rt.mq_open(name.encode(), os.O_RDONLY)
    if fd < 0:
        return False
    rt.mq_close(fd)
    if remove:
        rt.mq_unlink(name.encode())
    return True


def processes_running(command_line: str) -> list[int]:
    """Pids of processes whose command line ends with command_line."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if handle.read().replace(b"\0", b" ").decode(errors="replace").strip().endswith(command_line):
                    found.append(int(pid))
        except OSError:
            continue
    return found


def verify(expectations: list[Expectation], out) -> list[str]:
    """Every way the graded batch in out/ departs from the expectations (empty: all as expected)."""
    out = pathlib.Path(out)
    rows = read_rows(out)
    files = result_files(out)
    problems = []
    for expectation in expectations:
        baseline = rows.get(expectation.baseline) if expectation.baseline else None
        problems += expectation.problems(rows.get(expectation.name), baseline,
                                         files.get(expectation.name, out / "results" / "missing.json"),
                                         rows.get(expectation.no_better_than) if expectation.no_better_than else None)
    for path in [*sorted((out / "results").iterdir()), out / "grades.csv"]:
        text = path.read_text(errors="replace")
        if "FORGED-BY-A-SUBMISSION" in text:
            problems.append(f"{path} was forged by a submission")
        if path.suffix == ".json" and "extra_data" not in json.loads(text):
            problems.append(f"{path} was not written by the engine")
        if path.suffix == ".json":
            text = json.dumps(json.loads(text), ensure_ascii=False)
        if any(c in text for c in ("\x1b", "\x9b", "\u202e", "\x07")):
            problems.append(f"{path} holds terminal escape or control characters from a submission")
    with open(out / "grades.csv", newline="") as handle:
        cells = [cell for row in csv.reader(handle) for cell in row]
    problems += [f"grades.csv cell {cell[:40]!r} reads as a formula" for cell in cells
                 if cell.startswith(FORMULA_STARTS) and not _number(cell)]
    return problems


def _number(cell: str) -> bool:
    try:
        float(cell)
        return True
    except ValueError:
        return False
