"""Grade sample submission folders with the hidden suite (in-process gateway), as instructors run it:

    pytest grading_tests --submission FOLDER --results-json FILE

Each grading runs in its own process. To pay torch's import once rather than once per sample,
a child process imports torch and pytest and then forks one grandchild per sample: every sample
still starts from the same clean state. Two such children share the samples.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

REPO = pathlib.Path(__file__).resolve().parents[1]
WORKERS = 2


def suite_args(folder, results) -> list[str]:
    return ["grading_tests", "--submission", str(folder), "--results-json", str(results), "-q", "-p", "no:cacheprovider"]


def _load(folder: pathlib.Path, results: pathlib.Path, log: str, returncode: int) -> dict:
    if not results.exists():
        raise RuntimeError(f"grading {folder} wrote no results (exit {returncode}):\n{log[-3000:]}")
    return {**json.loads(results.read_text()), "pytest_output": log}


def grade_folder(folder: pathlib.Path, results: pathlib.Path, hash_seed: str = "0") -> dict:
    """Run grading_tests on folder's student/ package in a fresh interpreter; returns the results.json dict."""
    proc = subprocess.run([sys.executable, "-m", "pytest", *suite_args(folder, results)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONHASHSEED": hash_seed})
    return _load(folder, results, proc.stdout + proc.stderr, proc.returncode)


def grade_samples(samples: dict[str, dict | None], root: pathlib.Path) -> dict[str, dict]:
    """samples: name -> overrides (None: the untouched stubs). Returns name -> results."""
    from autograder.samples import write_submission

    folders = {name: write_submission(root / name, solution=overrides is not None, overrides=overrides or {})
               for name, overrides in samples.items()}
    names = list(samples)
    chunks = [names[i::WORKERS] for i in range(WORKERS)]

    def run_chunk(chunk):
        proc = subprocess.run([sys.executable, __file__, str(root), *chunk], cwd=REPO, capture_output=True,
                              text=True, timeout=1800, env={**os.environ, "PYTHONHASHSEED": "0"})
        if proc.returncode != 0:
            raise RuntimeError(f"the suite runner failed (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")

    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(run_chunk, [chunk for chunk in chunks if chunk]))
    graded = {}
    for name in names:
        log = root / f"{name}.log"
        graded[name] = _load(folders[name], root / f"{name}.json", log.read_text() if log.exists() else "", -1)
    return graded


def part_scores(results: dict) -> dict[int, tuple[float, float]]:
    """Part number -> (score, max) from a results.json dict."""
    scores: dict[int, list[float]] = {}
    for test in results["tests"]:
        part = int(test["name"].split()[1])
        entry = scores.setdefault(part, [0.0, 0.0])
        entry[0] += test["score"]
        entry[1] += test["max_score"]
    return {part: (round(s, 4), round(m, 4)) for part, (s, m) in scores.items()}


def _grade_forked(root: pathlib.Path, names: list[str]) -> int:
    """Child process: torch and pytest imported once; one forked grandchild per sample folder."""
    import pytest
    import torch  # noqa: F401 - imported before forking, so no grandchild pays for it

    for name in names:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                log = os.open(root / f"{name}.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(log, 1)
                os.dup2(log, 2)
                code = int(pytest.main(suite_args(root / name, root / f"{name}.json")))
            finally:
                sys.stdout.flush()
                os._exit(code)
        _pid, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) not in (0, 1):   # 1: some tests failed, as expected for bugs
            print(f"{name}: the suite exited with {os.waitstatus_to_exitcode(status)}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    os.chdir(REPO)
    sys.path.insert(0, str(REPO))
    sys.exit(_grade_forked(pathlib.Path(sys.argv[1]), sys.argv[2:]))
