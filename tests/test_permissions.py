"""What a run as root closes to other users while its sandboxes run, and puts back (grader/contain/permissions.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from grader.contain import permissions
from tests.test_engine import as_root, grade


def folder(path, mode=0o755):
    path.mkdir()
    os.chmod(path, mode)
    return path


def mode_of(path) -> int:
    return path.stat().st_mode & 0o7777


def test_a_run_closes_what_it_grades_and_puts_it_back(tmp_path):
    registry, shared = tmp_path / "registry.json", folder(tmp_path / "class")
    run = permissions.Closing.begin([shared], registry)
    assert mode_of(shared) == 0o750 and run.paths == [str(shared)]
    assert run.end() == [] and mode_of(shared) == 0o755 and not run.left_closed


def test_the_first_of_two_runs_to_end_leaves_what_they_share_closed_for_the_other(tmp_path):
    registry, shared, own = tmp_path / "registry.json", folder(tmp_path / "repository"), folder(tmp_path / "out")
    first = permissions.Closing.begin([shared, own], registry)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])   # a second run, alive
    try:
        entries = json.loads(registry.read_text())
        entries[str(shared)]["runs"].append(other.pid)   # it uses the repository too
        registry.write_text(json.dumps(entries))
        assert first.end() == [] and first.left_closed == [str(shared)]
        assert (mode_of(shared), mode_of(own)) == (0o750, 0o755)   # the other run's sandboxes still run
    finally:
        other.kill()
        other.wait()
    second = permissions.Closing.begin([shared], registry)   # it finds the repository closed already
    assert second.end() == [] and mode_of(shared) == 0o755   # the mode before the first run closed it


def test_a_run_that_was_killed_has_its_modes_put_back_by_the_next(tmp_path):
    registry, shared = tmp_path / "registry.json", folder(tmp_path / "out", 0o775)
    killed = subprocess.run([sys.executable, "-c", "import os, sys, pathlib; from grader.contain import "
                             "permissions; permissions.Closing.begin([sys.argv[1]], pathlib.Path(sys.argv[2]))",
                             str(shared), str(registry)], cwd=os.getcwd(), check=True)   # ends without end()
    assert killed.returncode == 0 and mode_of(shared) == 0o770
    permissions.Closing.begin([], registry).end()
    assert mode_of(shared) == 0o775


def test_a_path_replaced_since_is_named_not_put_back(tmp_path):
    registry, shared = tmp_path / "registry.json", folder(tmp_path / "gone")
    run = permissions.Closing.begin([shared], registry)
    shared.rmdir()
    shared.write_text("a file now")
    assert run.end() == [str(shared)]


@as_root
def test_a_registry_another_user_could_write_is_refused(tmp_path):
    victim, registry = tmp_path / "victim", tmp_path / "registry.json"
    victim.write_text("root's")
    os.chmod(victim, 0o600)
    registry.write_text(json.dumps({"runs": [], "modes": {str(victim): 0o100666}}))
    os.chmod(registry, 0o666)   # anyone could have written it: it must not decide what root opens
    with pytest.raises(PermissionError, match="remove it"):
        permissions.Closing.begin([], registry)
    assert mode_of(victim) == 0o600


@as_root
@pytest.mark.slow
def test_grading_as_root_puts_back_the_permissions_it_closed_and_says_so(tmp_path):
    from autograder.samples import write_submission
    submission = write_submission(tmp_path / "alice", solution=False)
    os.chmod(submission, 0o755)
    out = folder(tmp_path / "out")
    proc = grade(submission, "--out", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert mode_of(submission) == 0o755 and mode_of(out) == 0o755
    assert "closed to other users while the sandboxes ran (each has a user id of its own); put back: " \
           in proc.stdout and str(out) in proc.stdout
