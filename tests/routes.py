"""What the tests of each delivery route (the batch command, Gradescope's harness, `otter run`) share: the zip
students' own command writes, and a results.json's outcomes test by test, to compare with the run-wide batch's."""
from __future__ import annotations

import pathlib
import subprocess
import sys

from grader.gradescope import view
from grader.scoring import is_public_check
from tests.patience import SAFETY_NET_S


def submit(folder: pathlib.Path, zip_path: pathlib.Path) -> pathlib.Path:
    """The zip `python -m student.submit` writes of the submission in folder (its public checks not run)."""
    proc = subprocess.run([sys.executable, "-m", "student.submit", "--no-checks", "--out", str(zip_path)],
                          cwd=folder, capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return zip_path


def outcomes(results: dict) -> list[tuple]:
    """Each test's name, score, maximum and status, in order; Gradescope's summary by part and the handout's public
    checks (which the batch writes only when told) left out."""
    return [(t["name"], t.get("score"), t.get("max_score"), t.get("status")) for t in results["tests"]
            if t["name"] != view.SUMMARY_TITLE and not is_public_check(t)]
