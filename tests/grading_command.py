"""The batch command as a grader types it, for the tests that grade through it."""
from __future__ import annotations

import os
import subprocess
import sys

from grader.contain import isolation
from grader.paths import REPO
from tests.patience import SAFETY_NET_S

INSTRUCTORS = ("autograder", "grade")   # the batch, then the class reports (pictures, similarity)
RUNTIME = ("grader",)                   # the batch alone: for a test about grading, not about the reports


def grade(*args, env: dict | None = None, layers_off: str = "", timeout: float = SAFETY_NET_S,
          command: tuple[str, ...] = INSTRUCTORS) -> subprocess.CompletedProcess:
    """python -m autograder grade ARGS (or `command`), from the repository; env: variables on top of this process's,
    layers_off: isolation layers switched off (AUTOGRADER_SANDBOX_LAYERS_OFF)."""
    return subprocess.run([sys.executable, "-m", *command, *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {}), isolation.DISABLE_ENV: layers_off})
