"""A worker grades one submission: a fork of the template (pool.py), with torch imported and
never touched by hidden tests or student code.

It unpacks the submission, forks a trusted grading process (which imports the hidden
suite) and, whenever that process asks, a sandbox (which imports the student's code).
Both start warm because both are forks of the template; neither pays torch's import.
"""
from __future__ import annotations

import json
import os
import select
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass

from autograder.engine import isolation, sandbox, submissions, trusted
from autograder.engine.client import PID

_executor = None
GRACE = 60.0   # seconds of pytest's own work allowed beyond the student's budget


def prepare_template() -> None:
    """Import and warm up what every fork needs (called once, before workers are forked)."""
    global _executor
    if _executor is None:
        import hypothesis  # noqa: F401 - public packages the trusted fork needs; imported once here
        import pytest  # noqa: F401
        _executor = sandbox.load_executor()
        sandbox.warm_up()


@dataclass(frozen=True)
class Settings:
    limits: isolation.Limits
    isolated: bool
    sandbox_root: str     # 0711: sandboxes can enter their own folder but list nothing
    trusted_root: str     # 0700: the trusted processes' scratch space


def grade_one(source: str, settings: Settings, private_fds=()) -> dict:
    """Grade one submission (a folder or a zip); returns the outcome dict of trusted.grade.

    private_fds: descriptors of the caller that the trusted process must not inherit.
    """
    prepare_template()
    private_dir = tempfile.mkdtemp(prefix="sub-", dir=settings.sandbox_root)
    work_dir = tempfile.mkdtemp(prefix="grade-", dir=settings.trusted_root)
    started = time.monotonic()
    try:
        try:
            submissions.unpack(source, private_dir)
        except submissions.SubmissionError as error:
            return {"status": "error", "message": str(error), "score": 0.0, "results": None}
        outcome = _run_trusted(private_dir, work_dir, settings, private_fds)
    finally:
        shutil.rmtree(private_dir, ignore_errors=True)
        shutil.rmtree(work_dir, ignore_errors=True)
    outcome["seconds"] = round(time.monotonic() - started, 3)
    return outcome


def _run_trusted(private_dir: str, work_dir: str, settings: Settings, private_fds) -> dict:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    worker = os.getpid()
    pid = os.fork()
    if pid == 0:
        ours.close()
        for fd in private_fds:
            os.close(fd)
        isolation.die_with_parent(worker)
        trusted.run(theirs, private_dir, work_dir, settings.limits, settings.isolated)
    theirs.close()
    uid = isolation.sandbox_uid(pid) if settings.isolated else None
    deadline = time.monotonic() + settings.limits.budget + GRACE
    sandboxes: list[int] = []
    exit_status, killed = None, False
    try:
        exit_status, killed = _serve(ours, pid, uid, private_dir, settings, deadline, sandboxes)
    finally:
        ours.close()
        for child in sandboxes:
            isolation.kill_group(child)
        if uid is not None:
            isolation.kill_user(uid)
            isolation.remove_files_of(uid)
        _reap(sandboxes)
    if killed:
        return {"status": "timeout", "message": f"grading took longer than {settings.limits.budget + GRACE:g} s and was stopped",
                "score": 0.0, "results": None}
    result_path = os.path.join(work_dir, "result.json")
    if exit_status != 0 or not os.path.exists(result_path):
        try:
            with open(os.path.join(work_dir, "pytest.log"), errors="replace") as handle:
                tail = handle.read()[-500:].strip().replace("\n", " | ")
        except OSError:
            tail = "no log"
        # Not the student's doing: engine_failure makes a later run with the same --out grade it again.
        return {"status": "error", "message": f"grader error (exit {exit_status}): {tail}", "score": 0.0,
                "results": None, "engine_failure": True}
    with open(result_path) as handle:
        return json.load(handle)


def _serve(control, trusted_pid, uid, private_dir, settings, deadline, sandboxes) -> tuple[int | None, bool]:
    """Answer spawn requests until the trusted process exits; (its exit status, whether we killed it)."""
    listening = [control]
    while True:
        done, status = os.waitpid(trusted_pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), False
        if time.monotonic() > deadline:
            os.kill(trusted_pid, 9)
            os.waitpid(trusted_pid, 0)
            return None, True
        _reap(sandboxes, block=False)
        ready, _, _ = select.select(listening, [], [], 0.05)
        if not ready:
            if not listening:
                time.sleep(0.01)
            continue
        try:
            message, fds, _flags, _addr = socket.recv_fds(control, 16, 2)
        except OSError:
            message, fds = b"", []
        if message != b"spawn" or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            if not message:
                listening = []   # the trusted process is finishing
            continue
        child = os.fork()
        if child == 0:
            control.close()
            sandbox.run(fds[0], fds[1], private_dir, uid, settings.limits, _executor)
        sandboxes.append(child)
        for fd in fds:
            os.close(fd)
        control.sendall(PID.pack(child))


def _reap(pids: list[int], block: bool = True) -> None:
    for pid in list(pids):
        try:
            done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            pids.remove(pid)
