"""A worker grades one submission: a fork of the template (pool.py), with torch imported and
never touched by hidden tests or student code.

It unpacks the submission (root's files, readable by its sandboxes, writable by none), forks a
trusted grading process (which imports the hidden suite) and, whenever that process asks, a
sandbox (which locks itself down and imports the student's code). Both start warm because both
are forks of the template; neither pays torch's import. When a sandbox ends, the worker makes
sure nothing of it is left: with a PID namespace and private mounts the kernel already did; else
it kills what the sandbox's user still runs (or, without root, every stray child: the worker is a
subreaper) and empties its scratch folder as the sandbox's own user.
"""
from __future__ import annotations

import os
import select
import shutil
import socket
import tempfile
import time

from autograder.engine import isolation, processes, sandbox, submissions, trusted
from autograder.engine.client import PID
from autograder.engine.outcome import Outcome
from autograder.engine.pool import Settings

_prepared = False


def prepare_template(*, meta: bool = True) -> None:
    """Import and warm up what every fork needs (once, in the template, before workers are forked).
    meta=False leaves the meta device's half second for later (sandboxes do it themselves if needed)."""
    global _prepared
    if not _prepared:
        import pytest  # noqa: F401 - the trusted fork's test runner, imported once here
        sandbox.warm_up()
        _prepared = True
    if meta:
        sandbox.warm_up_meta()


def grade_one(source: str, settings: Settings, private_fds=()) -> Outcome:
    """Grade one submission (a folder or a zip).

    private_fds: descriptors of the caller that the trusted process must not inherit.
    """
    prepare_template(meta=False)
    started = time.monotonic()
    private_dir = tempfile.mkdtemp(prefix="sub-", dir=settings.sandbox_root)
    work_dir = tempfile.mkdtemp(prefix="grade-", dir=settings.trusted_root)
    try:
        try:
            unpacked = submissions.unpack(source, private_dir)
        except submissions.SubmissionError as error:
            outcome = Outcome.rejected(str(error), error.flags)
        except Exception as error:  # noqa: BLE001 - any other oddity of the input is an error row, not a crash
            outcome = Outcome.rejected(f"the submission could not be unpacked ({type(error).__name__}: {error})")
        else:
            submissions.open_for_reading(private_dir)
            outcome = _run_trusted(private_dir, work_dir, settings, private_fds)
            outcome.flags = [*unpacked.flags, *outcome.flags]
            if unpacked.note:
                outcome.message = "; ".join(filter(None, [unpacked.note, outcome.message]))
    finally:
        # Written by this process only: no sandbox could ever write there (read-only to them).
        shutil.rmtree(private_dir, ignore_errors=True)
        shutil.rmtree(work_dir, ignore_errors=True)
    outcome.seconds = round(time.monotonic() - started, 3)
    return outcome


def _run_trusted(private_dir: str, work_dir: str, settings: Settings, private_fds) -> Outcome:
    processes.become_subreaper()   # whatever a sandbox leaves running becomes ours to sweep
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    worker = os.getpid()
    pid = os.fork()
    if pid == 0:
        ours.close()
        for fd in private_fds:
            os.close(fd)
        processes.die_with_parent(worker)
        trusted.run(theirs, work_dir, settings.limits, settings.plan)
    theirs.close()
    deadline = time.monotonic() + settings.limits.budget + settings.limits.grace
    boxes = Boxes(settings, private_dir, pid)
    try:
        exit_status, killed = _serve(ours, pid, boxes, deadline)
    finally:
        ours.close()
        boxes.close()
    if killed:
        limit = settings.limits.budget + settings.limits.grace
        return Outcome("timeout", f"grading took longer than {limit:g} s and was stopped")
    try:
        with open(os.path.join(work_dir, "result.json")) as handle:
            if exit_status == 0:
                return Outcome.from_json(handle.read())
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(work_dir, "pytest.log"), errors="replace") as handle:
            tail = handle.read()[-500:].strip().replace("\n", " | ")
    except OSError:
        tail = "no log"
    # Not the student's doing: a later run with the same --out grades it again.
    return Outcome.failed(f"grader error (exit {exit_status}): {tail}")


class Boxes:
    """The sandboxes of one submission: forked on request, and nothing of them left once they end."""

    def __init__(self, settings: Settings, private_dir: str, trusted_pid: int):
        self.settings, self.private_dir, self.trusted_pid = settings, private_dir, trusted_pid
        self.plan = settings.plan
        self.live: dict[int, isolation.Box] = {}
        self.count = 0

    def spawn(self, control: socket.socket) -> tuple[int, int, int]:
        """Fork a sandbox; (its pid, the trusted side's end of its socket, the read end of its output pipe)."""
        self.count += 1
        scratch = os.path.join(self.settings.sandbox_root, f"box-{os.getpid()}-{self.count}")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out_read, out_write = os.pipe()
        child = os.fork()
        if child == 0:
            control.close()
            ours.close()
            os.close(out_read)
            sandbox.run(theirs.detach(), out_write, self._box(os.getpid(), scratch), self.plan)
        theirs.close()
        os.close(out_write)
        self.live[child] = self._box(child, scratch)
        return child, ours.detach(), out_read

    def _box(self, pid: int, scratch: str) -> isolation.Box:
        uid = isolation.sandbox_uid(pid) if self.plan.has("uid") else None
        return isolation.Box(self.private_dir, scratch, uid, self.settings.limits)

    def ended(self, pid: int) -> None:
        box = self.live.pop(pid, None)
        if box is None:
            return   # an orphan of some sandbox, re-parented to us (subreaper) and now reaped
        if not self.plan.has("pid"):
            if box.uid is not None:
                processes.kill_user(box.uid)
            else:
                processes.kill_children_except({self.trusted_pid, *self.live})
        if box.uid is not None and not (self.plan.has("mnt") and self.plan.has("landlock")):
            isolation.clean_shared_folders(box.uid)   # as its own user: nothing else can be touched
        if not self.plan.has("mnt"):
            isolation.clean_folder(box.scratch, box.uid)

    def reap(self, block: bool = False) -> int | None:
        """Reap ended children; the trusted process's wait status if it was among them."""
        status = None
        for pid, wait_status in processes.reap(None, block=block).items():
            if pid == self.trusted_pid:
                status = wait_status
            else:
                self.ended(pid)
        return status

    def close(self) -> None:
        for pid in list(self.live):
            processes.kill_group(pid)
        while self.live:
            try:
                pid, _status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            self.ended(pid)
        for pid in list(self.live):
            self.ended(pid)
        if not self.plan.has("pid"):
            processes.kill_children_except(set())   # strays of sandboxes that ended long ago


def _serve(control, trusted_pid: int, boxes: Boxes, deadline: float) -> tuple[int | None, bool]:
    """Answer spawn requests until the trusted process exits; (its exit status, whether we killed it).

    The first sandbox is started right away, so it locks down, warms up and imports the submission while
    the trusted process starts pytest; the first request gets it."""
    listening = [control]
    spare = boxes.spawn(control)
    try:
        while True:
            status = boxes.reap()
            if status is not None:
                return os.waitstatus_to_exitcode(status), False
            if time.monotonic() > deadline:
                os.kill(trusted_pid, 9)
                os.waitpid(trusted_pid, 0)
                return None, True
            ready, _, _ = select.select(listening, [], [], 0.05)
            if not ready:
                if not listening:
                    time.sleep(0.01)
                continue
            try:
                message = control.recv(16)
            except OSError:
                message = b""
            if not message:
                listening = []   # the trusted process is finishing
                continue
            child, sock_fd, out_fd = spare if spare is not None else boxes.spawn(control)
            spare = None
            try:
                socket.send_fds(control, [PID.pack(child)], [sock_fd, out_fd])
            finally:
                os.close(sock_fd)
                os.close(out_fd)
    finally:
        if spare is not None:
            os.close(spare[1])
            os.close(spare[2])
