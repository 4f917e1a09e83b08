"""What a student uploads, written by the students' own command (python -m student.submit)."""
from __future__ import annotations

import pathlib
import subprocess
import sys

from tests.patience import SAFETY_NET_S


def submit(folder: pathlib.Path, zip_path: pathlib.Path) -> pathlib.Path:
    """The zip `python -m student.submit` writes of the submission in folder (its public checks not run)."""
    proc = subprocess.run([sys.executable, "-m", "student.submit", "--no-checks", "--out", str(zip_path)],
                          cwd=folder, capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return zip_path
