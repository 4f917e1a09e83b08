"""Bounds a box cannot stretch (issue 48, item 1), through the engine.

CPU time spent in children the kernel reaps (SIGCHLD ignored) reaches no /proc file: the box's cgroup counts it
(the memory layer), and without one the seccomp filter refuses the children. Graded at --timeout 2, a smaller twin
of the zoo's attack (autograder/adversarial/bounds.py) times out with the layers on, and with them switched off
scores 100, its CPU uncounted (it must end within the call's load-free cap, 6 x 2 s: its parent sleeps meanwhile,
and that is counted). Behind the load-free clocks a plain wall-clock net ends a grading as the engine's
failure, which the next run grades again: shown on a call that sleeps past it, and the net off (a factor no grading
reaches), graded.
"""
from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

from autograder.adversarial import bounds, read_rows
from autograder.adversarial.abuse import abusive
from autograder.adversarial.base import Context
from autograder.samples import write_submission
from grader.contain import seccomp
from grader.paths import REPO
from tests.grading_command import RUNTIME, grade
from tests.patience import SAFETY_NET_S

SLOW_FIXTURES = {"reaped"}
REAPED = "reaped-children"
TIMEOUT = "2"
CPU_S = 3.0   # burnt in reaped children: past the call's cap (--timeout 2)


@pytest.fixture(scope="module")
def reaped(tmp_path_factory):
    """grades.csv's rows of the twin graded with the layers on, beside the reference (the control: 100 at the same
    --timeout), and of the twin alone with them off; by the runtime's batch command (no class report to make)."""
    root = tmp_path_factory.mktemp("bounds")
    context = Context(root / "class", root / "markers")
    write_submission(root / "class" / "reference")
    bounds.reaped("masking.py", "apply_mask", CPU_S)(root / "class" / REAPED, context)
    rows = {}
    for layers_off, graded in (("", root / "class"), ("memory,seccomp", root / "class" / REAPED)):
        out = root / f"out-{layers_off or 'on'}"
        proc = grade(graded, "--out", out, "--workers", "2", "--timeout", TIMEOUT, layers_off=layers_off,
                     command=RUNTIME)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        rows[layers_off or "on"] = read_rows(out)
    return rows


@pytest.mark.skipif(platform.machine() not in seccomp.ARCHITECTURES, reason="no seccomp filter on this machine")
def test_cpu_of_children_the_kernel_reaped_is_counted_or_refused(reaped):
    on = reaped["on"]
    assert on["reference"]["score"] == 100.0
    assert on[REAPED]["status"] == "timeout"   # the message says only the kind of trouble, at once
    assert on[REAPED]["part2"] < on["reference"]["part2"]   # apply_mask (Part 2) timed out
    off = reaped["memory,seccomp"]   # the defence off: its children compute uncounted, the call answers
    assert off[REAPED]["status"] == "graded" and off[REAPED]["score"] == on["reference"]["score"] == 100.0


# Grades one submission in a worker of its own with tiny limits and no layer (the net holds whatever the box did),
# once per wall_net_factor given; prints each outcome as JSON.
GRADE_WITH_NET = """\
import json, sys, tempfile
from grader.contain import isolation
from grader.contain.limits import Limits
from grader.run import worker
from grader.run.run_settings import RunSettings
worker.prepare_template()
for factor in map(float, sys.argv[2:]):
    limits = Limits(call_timeout=10.0, budget=100.0, grace=60.0, wall_net_factor=factor)
    settings = RunSettings(limits, isolation.Plan(()), tempfile.mkdtemp(), tempfile.mkdtemp())
    outcome = worker.grade_one(sys.argv[1], settings)
    print(json.dumps([outcome.status, outcome.engine_failure, outcome.seconds, outcome.score, outcome.message]))
"""
SLEEP_S = 12.0   # in one call: within its load-free cap (60 s) and the submission's budget
NET_S = 8.0      # the wall-clock net of the first grading: its factor times the load-free net of 160 s


@pytest.mark.slow
def test_past_the_wall_clock_net_a_grading_is_the_engines_failure_graded_again(tmp_path):
    sleeps = f'if "slept" not in _abuse_done:\n    _abuse_done.add("slept")\n    import time\n    time.sleep({SLEEP_S})'
    abusive("masking.py", "causal_mask", sleeps)(tmp_path / "sleeper", Context(tmp_path, tmp_path / "markers"))
    proc = subprocess.run([sys.executable, "-c", GRADE_WITH_NET, str(tmp_path / "sleeper"), str(NET_S / 160.0),
                           "1000"], cwd=REPO, capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (status, failed, seconds, _score, message), off = (json.loads(line) for line in proc.stdout.splitlines()[-2:])
    assert status == "error" and failed and f"{NET_S:g} s of wall-clock time" in message, message
    assert NET_S <= seconds < SLEEP_S, seconds
    assert off[:2] == ["graded", False] and off[2] > SLEEP_S and off[3] == 100.0, off   # the net off: it waits
