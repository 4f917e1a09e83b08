"""Run the hidden suite in-process on a trusted folder, as an instructor tries it without the engine:

    pytest grading_tests --submission FOLDER --results-json FILE

(The zoo itself is graded by the engine, once per run: tests/conftest.py.)
"""
from __future__ import annotations

import inspect
import json
import os
import pathlib
import subprocess
import sys

from grader.paths import REPO
from grader.scoring import entry_part
from tests.patience import SAFETY_NET_S


def grade_folder(folder: pathlib.Path, results: pathlib.Path, hash_seed: str = "0") -> dict:
    """Run grading_tests on folder's student/ package in a fresh interpreter; returns the results.json dict."""
    command = [sys.executable, "-m", "pytest", "grading_tests", "--submission", str(folder),
               "--results-json", str(results), "-q", "-p", "no:cacheprovider"]
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=SAFETY_NET_S,
                          env={**os.environ, "PYTHONHASHSEED": hash_seed})
    if not results.exists():
        raise RuntimeError(f"grading {folder} wrote no results (exit {proc.returncode}):\n{proc.stdout[-3000:]}")
    return json.loads(results.read_text())


def part_scores(results: dict) -> dict[int, tuple[float, float]]:
    """Part number -> (score, max) from a results.json dict."""
    scores: dict[int, list[float]] = {}
    for test in (t for t in results["tests"] if "max_score" in t):   # not the entry of tests not run
        part = entry_part(test)
        entry = scores.setdefault(part, [0.0, 0.0])
        entry[0] += test["score"]
        entry[1] += test["max_score"]
    return {part: (round(s, 4), round(m, 4)) for part, (s, m) in scores.items()}


def call_hidden(test, student, **params) -> None:
    """A hidden test function called directly, with the fixtures it asks for: `student`, and `second_device` (the
    gateway's) where it runs student code there, as grading_tests/conftest.py would give them."""
    if "second_device" in inspect.signature(test).parameters:
        params = {**params, "second_device": student.second_device}
    test(student, **params)
