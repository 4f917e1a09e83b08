"""What changed between two gradings of the same submissions, test by test.

    graded_with(limits)                  what a result was graded with (the suite, the spec, the reference, the
                                         limits): a digest each result remembers
    archive(out)                         --regrade: out's results moved to out/earlier/<time>/, kept as they were
    compare(before, after)               the submissions whose score, status, any test's verdict or what they
                                         were graded on (Python, torch, CUDA, driver, GPU: environment.py) differ
    write(path, changes, labels)         changes.csv (a regrade) or repeat.csv (--repeat: the same class twice)

A "flip" is a hidden test passed in one grading and failed (or not run) in the other; a test that exists in
only one of them (the suite gained or lost it) is listed as added or removed.
"""
from __future__ import annotations

import csv
import dataclasses
import datetime
import hashlib
import io
import json
import pathlib
import shutil

from assignment.spec import SPEC
from grader.paths import GRADING_DIR, REFERENCE_DIR, REPO
from grader.row import Row
from grader.run.files import atomic_write
from grader.sanitize import csv_cell

SUITE_FILES = (GRADING_DIR, REFERENCE_DIR)
OUTPUTS = ("grades.csv", "tests.csv", "tests.png", "summary.png", "similarity.csv", "similarity.html",
           "gradescope.csv", "changes.csv", "repeat.csv")


def graded_with(limits) -> str:
    """A digest of everything a score depends on besides the submission: the hidden suite's files, the reference
    (where it is there), what of the spec a score depends on (Spec.scoring_facts: not a late policy, a budget or a
    visibility) and the limits."""
    digest = hashlib.sha256(repr(sorted(dataclasses.asdict(limits).items())).encode())
    digest.update(SPEC.scoring_facts().encode())
    for root in SUITE_FILES:   # autograder.zip ships no reference: what is not there is not part of the digest
        paths = sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts) \
            if root.is_dir() else [root] if root.is_file() else []
        for path in paths:
            digest.update(path.relative_to(REPO).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return "sha256:" + digest.hexdigest()[:16]


def archive(out: pathlib.Path) -> pathlib.Path | None:
    """Move out's results (and the files made from them) to out/earlier/<UTC time>/; None when out holds none."""
    results = out / "results"
    if not results.is_dir() or not any(results.glob("*.json")):
        return None
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    folder = out / "earlier" / stamp
    folder.mkdir(parents=True)
    results.rename(folder / "results")
    for name in OUTPUTS:
        if (out / name).is_file():
            shutil.move(out / name, folder / name)
    return folder


def verdicts(results: pathlib.Path, slug: str) -> dict[str, str]:
    """Hidden test name -> "passed" or "failed" in one results file (the tests worth points)."""
    try:
        document = json.loads((results / f"{slug}.json").read_text())
    except (OSError, ValueError):
        return {}
    return {str(test["name"]): "passed" if test.get("status") == "passed" else "failed"
            for test in document.get("tests", []) if test.get("max_score") and "name" in test}


@dataclasses.dataclass
class Change:
    before: Row             # the row of the first grading
    after: Row              # and of the second
    flips: list[tuple[str, str, str]]   # (test, verdict before, verdict after)

    @property
    def difference(self) -> float:
        return round(self.after.score - self.before.score, 4)

    @property
    def environment(self) -> str:
        """What it was graded on, where that changed ("python 3.11.9; torch 2.12.0 -> python 3.11.9; torch 2.13.0")."""
        before, after = self.before.environment, self.after.environment
        return "" if before == after else f"{before or 'unknown'} -> {after or 'unknown'}"


def compare(before: tuple[dict[str, Row], pathlib.Path], after: tuple[dict[str, Row], pathlib.Path]) -> list[Change]:
    """Each side: (source -> row, its results folder). Every submission graded in both whose score, status, any
    test's verdict or environment differs, the largest score change first."""
    (rows_before, folder_before), (rows_after, folder_after) = before, after
    changes = []
    for source in sorted(rows_before.keys() & rows_after.keys()):
        old, new = rows_before[source], rows_after[source]
        tests_old, tests_new = verdicts(folder_before, old.slug), verdicts(folder_after, new.slug)
        flips = [(test, tests_old.get(test, "absent"), tests_new.get(test, "absent"))
                 for test in sorted(tests_old.keys() | tests_new.keys())
                 if tests_old.get(test) != tests_new.get(test)]
        change = Change(old, new, flips)
        if flips or change.difference or old.status != new.status or change.environment:
            changes.append(change)
    return sorted(changes, key=lambda c: (-abs(c.difference), c.after.submission.lower()))


def describe(flips: list[tuple[str, str, str]]) -> str:
    # A test a results file does not grade was skipped there (worth 0: a GPU test on a CPU grader) or was not in
    # that grading's suite: the file cannot say which.
    words = {"absent": "not graded (skipped, or not in that suite)"}
    return "; ".join(f"{test}: {words.get(a, a)} -> {words.get(b, b)}" for test, a, b in flips)


def write(path: pathlib.Path, changes: list[Change], labels: tuple[str, str] = ("before", "after")) -> None:
    first, second = labels
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["submission", f"{first}_score", f"{second}_score", "change", f"{first}_status",
                     f"{second}_status", "tests_flipped", "flips", "environment"])
    for change in changes:
        writer.writerow([csv_cell(change.after.submission), change.before.score, change.after.score,
                         change.difference, change.before.status, change.after.status, len(change.flips),
                         csv_cell(describe(change.flips)), csv_cell(change.environment)])
    atomic_write(path, buffer.getvalue())
