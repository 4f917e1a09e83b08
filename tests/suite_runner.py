"""Grade sample submission folders with the hidden suite (in-process gateway), each in its own child process, two at a time."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from autograder.samples import write_submission

REPO = pathlib.Path(__file__).resolve().parents[1]
WORKERS = 2


def grade_folder(folder: pathlib.Path, results: pathlib.Path, hash_seed: str = "0") -> dict:
    """Run grading_tests on folder's student/ package; returns the results.json dict (plus pytest's output)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "grading_tests", "--submission", str(folder), "--results-json", str(results),
         "-q", "-p", "no:cacheprovider"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
    )
    if not results.exists():
        raise RuntimeError(f"grading {folder} wrote no results (exit {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return {**json.loads(results.read_text()), "pytest_output": proc.stdout}


def grade_samples(samples: dict[str, dict | None], root: pathlib.Path) -> dict[str, dict]:
    """samples: name -> overrides (None: the untouched stubs). Returns name -> results."""
    def one(name):
        overrides = samples[name]
        folder = write_submission(root / name, solution=overrides is not None, overrides=overrides or {})
        return name, grade_folder(folder, root / f"{name}.json")

    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(pool.map(one, samples))


def part_scores(results: dict) -> dict[int, tuple[float, float]]:
    """Part number -> (score, max) from a results.json dict."""
    scores: dict[int, list[float]] = {}
    for test in results["tests"]:
        part = int(test["name"].split()[1])
        entry = scores.setdefault(part, [0.0, 0.0])
        entry[0] += test["score"]
        entry[1] += test["max_score"]
    return {part: (round(s, 4), round(m, 4)) for part, (s, m) in scores.items()}
