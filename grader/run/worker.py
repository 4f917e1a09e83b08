"""A worker grades one submission: a fork of the template (pool.py), with torch imported and
never touched by hidden tests or student code.

It unpacks the submission (root's files, readable by its sandboxes, writable by none), forks a
trusted grading process (which imports the hidden suite) and sandboxes (which lock themselves
down, then wait: each imports the student's code only when the trusted process takes it over, and
the one it took before is retired first, so only one runs student code at a time). Both start warm
because both are forks of the template; neither pays torch's import. When a sandbox ends, the worker makes
sure nothing of it is left: with a PID namespace and private mounts the kernel already did; else
it kills what the sandbox's user still runs (or, without root, every stray child: the worker is a
subreaper) and empties its scratch folder as the sandbox's own user. With the memory layer each
sandbox gets a memory cgroup of its own (memcg.py), made here before the fork and watched while it
runs: at the limit the whole box is stopped, and the submission's outcome says so (a flag) and
carries the largest peak of its boxes.
"""
from __future__ import annotations

import collections
import contextlib
import gc
import os
import pathlib
import select
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass

from grader import source_rules
from grader.contain import cgroupfs, cleanup, disk, isolation, memcg, processes
from grader.contain.load_free import LoadFreeClock
from grader.gateway.client import SECOND_WANTED, SPAWNED
from grader.run import public_checks, sandbox, unpacking
from grader.run.outcome import Outcome
from grader.run.run_settings import RunSettings


def prepare_template(*, full: bool = True, cuda: bool = False) -> None:
    """Warm up the template, so that every process forked after it starts warm: torch's common CPU paths and the
    emulated second device (a few milliseconds: emulated.py answers torch's look-up of distributed tensors, which
    took half a second), and with full, pytest (the trusted process's runner). The worker of a run's only
    submission is forked before pytest's import: its trusted process imports it side by side with the first
    sandbox's start. cuda: a GPU run, whose second device is the GPU: no emulated one, and CUDA is left alone (it
    starts in each process that uses it, never before a fork)."""
    sandbox.warm_up(emulated_device=not cuda)
    if not cuda:
        sandbox.warm_up_second_device()
    if full:
        from grader.run import trusted  # noqa: F401 - the trusted process's code, pytest with it


KEPT = ("pytest.log", "sandbox-output.txt")   # what the trusted process leaves in its folder, for --keep


def grade_one(source: str, settings: RunSettings, private_fds=(), keep: str | None = None,
              gpu: int | None = None) -> Outcome:
    """Grade one submission (a folder or a zip).

    private_fds: descriptors of the caller that the trusted process must not inherit.
    keep: a folder to copy the trusted process's pytest log and the sandboxes' output into.
    gpu: the GPU its trusted process and sandboxes are given (a GPU run); None: none.
    """
    started = time.monotonic()
    private_dir = tempfile.mkdtemp(prefix="sub-", dir=settings.sandbox_root)
    work_dir = tempfile.mkdtemp(prefix="grade-", dir=settings.trusted_root)
    try:
        source_rules.remember(settings.known_sources)   # the handout's files: read by the batch, not again here
        try:
            unpacked = unpacking.unpack(source, private_dir)
        except unpacking.SubmissionError as error:
            outcome = Outcome.rejected(str(error), error.flags)
        except Exception as error:  # noqa: BLE001 - any other oddity of the input is an error row, not a crash
            outcome = Outcome.rejected(f"the submission could not be unpacked ({type(error).__name__}: {error})")
        else:
            if settings.public_checks:
                public_checks.install(pathlib.Path(private_dir) / unpacking.PACKAGE)   # whatever stood there
            unpacking.open_for_reading(private_dir)
            outcome = _run_trusted(private_dir, work_dir, settings, private_fds, gpu)
            outcome.flags = [*unpacked.flags, *outcome.flags]
            if unpacked.note:
                outcome.message = "; ".join(filter(None, [unpacked.note, outcome.message]))
        if keep:
            _keep(work_dir, keep)
        if outcome.engine_failure:
            outcome.message += (f"; the whole story: {os.path.join(keep, KEPT[0])}" if keep else
                                "; grade it again with --keep DIR to keep its pytest log")
    finally:
        # Written by this process only: no sandbox could ever write there (read-only to them).
        shutil.rmtree(private_dir, ignore_errors=True)
        shutil.rmtree(work_dir, ignore_errors=True)
    outcome.seconds = round(time.monotonic() - started, 3)
    return outcome


def _keep(work_dir: str, keep: str) -> None:
    """Copy what the trusted process left (written by trusted code only) into the kept folder."""
    os.makedirs(keep, exist_ok=True)
    for name in KEPT:
        if os.path.isfile(os.path.join(work_dir, name)):
            shutil.copyfile(os.path.join(work_dir, name), os.path.join(keep, name))


def _run_trusted(private_dir: str, work_dir: str, settings: RunSettings, private_fds,
                 gpu: int | None = None) -> Outcome:
    processes.become_subreaper()   # whatever a sandbox leaves running becomes ours to sweep
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    worker = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            ours.close()
            for fd in private_fds:
                os.close(fd)
            processes.die_with_parent(worker)
            # The template's objects (torch's) are never garbage here: frozen, no collection scans them again. A
            # full collection while pytest imports would (0.1 s). Never in a sandbox: its code may look for them.
            gc.freeze()
            from grader.run import trusted  # pytest with it: in this process, unless the template had it

            package = os.path.join(private_dir, unpacking.PACKAGE)
            trusted.run(theirs, work_dir, settings.limits, package, settings.plan.hides_the_graders_files(), gpu,
                        settings.public_checks)
        finally:
            os._exit(1)   # never back into the worker's code (the worker reports the missing result)
    theirs.close()
    boxes = Boxes(settings, private_dir, pid, gpu)
    try:
        exit_status, killed = _serve(ours, pid, boxes, LoadFreeClock(worker), net(settings))
    finally:
        ours.close()
        boxes.close()
    outcome = _result(work_dir, settings, exit_status, killed)
    outcome.peak_memory_bytes = boxes.peak
    if boxes.stopped_at_limit:
        outcome.flags.append(f"a sandbox was stopped at the memory limit "
                             f"({settings.limits.memory_bytes / 2**30:g} GiB for all its processes together)")
    if boxes.stopped_at_disk:
        outcome.flags.append(f"a sandbox was stopped at the disk limit ({settings.limits.scratch_bytes >> 20} MiB "
                             f"of files, as its private tmpfs would hold where the kernel gives one)")
    return outcome


def net(settings: RunSettings) -> float:
    """Load-free seconds after which a submission's grading is stopped as the engine's failure: the submission's
    own (Limits.submission_net), and the public checks' budget where they run."""
    checks = public_checks.limits_for(settings.limits).budget if settings.public_checks else 0.0
    return settings.limits.submission_net + checks


def _result(work_dir: str, settings: RunSettings, exit_status: int | None, killed: str) -> Outcome:
    if killed:   # the student's code had its budget at most: the rest is the engine's, so a later run grades it again
        return Outcome.failed(f"grader error: grading took longer than {killed}, and was stopped (the student's "
                              f"code is stopped at its budget of {settings.limits.budget:g} s); a later run grades "
                              f"it again")
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


@dataclass
class Spare:
    """A forked sandbox not yet handed to the trusted process: its pid, the trusted side's end of its socket,
    the read end of its output pipe, and whether the second device is already warm in it."""
    pid: int
    sock_fd: int
    out_fd: int
    second_warm: bool

    def close_fds(self) -> None:
        os.close(self.sock_fd)
        os.close(self.out_fd)


class Boxes:
    """The sandboxes of one submission: forked on request, and nothing of them left once they end."""

    def __init__(self, settings: RunSettings, private_dir: str, trusted_pid: int, gpu: int | None = None):
        self.settings, self.private_dir, self.trusted_pid = settings, private_dir, trusted_pid
        self.plan = settings.plan
        self.gpu = gpu                  # the GPU each of its boxes may open (a GPU run)
        self.live: dict[int, isolation.Box] = {}
        self.count = 0
        self.peak = 0                   # memory layer: the most any box's processes held together
        self.stopped_at_limit = 0       # boxes stopped at the memory limit
        self.stopped_at_disk: set[int] = set()   # boxes stopped at the scratch limit (no tmpfs bounds them)
        self.stopping: set[str] = set()  # groups this worker killed at their limit (v1: the box waited there)

    def spawn(self, control: socket.socket, *, warm_second: bool = True) -> Spare:
        """Fork a sandbox (warm_second: it warms up the second device before it imports the submission)."""
        self.count += 1
        name = f"{cgroupfs.BOX_PREFIX}{os.getpid()}-{self.count}"   # cgroupfs counts a box's CPU by it
        scratch = os.path.join(self.settings.sandbox_root, name)
        group = ""
        if self.plan.has("memory"):   # before the fork, so the sandbox can join it first thing
            with contextlib.suppress(OSError):   # without it the sandbox cannot join, says so (Broken), runs nothing
                group = memcg.create_box(self.plan.memory_group, name, self.settings.limits.memory_bytes)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out_read, out_write = os.pipe()
        child = os.fork()
        if child == 0:
            try:
                control.close()
                ours.close()
                os.close(out_read)
                box = self._box(os.getpid(), scratch, group)
                sandbox.run(theirs.detach(), out_write, box, self.plan.for_box(box), warm_second=warm_second)
            finally:
                os._exit(1)   # never back into the worker's code
        theirs.close()
        os.close(out_write)
        self.live[child] = self._box(child, scratch, group)
        return Spare(child, ours.detach(), out_read, warm_second or sandbox.second_device_is_warm())

    def _box(self, pid: int, scratch: str, group: str = "") -> isolation.Box:
        uid = isolation.sandbox_uid(pid) if self.plan.has("uid") else None
        return isolation.Box(self.private_dir, scratch, uid, self.settings.limits, group, self.gpu)

    def watch(self) -> None:
        """Stop, whole, every box that reached its memory limit (v1: its processes wait there for this; v2: the
        kernel already killed them all, this only makes sure)."""
        for box in self.live.values():
            if box.memory_group and box.memory_group not in self.stopping and memcg.over_limit(box.memory_group):
                self.stopping.add(box.memory_group)
                memcg.kill(box.memory_group)

    def watch_disk(self) -> None:
        """Without private mounts no tmpfs bounds what a box writes: stop, whole, every box holding more of the
        disk than its scratch limit (disk.py measures it from outside)."""
        if self.plan.has("mnt"):
            return
        limit = self.settings.limits.scratch_bytes
        for pid, box in list(self.live.items()):
            if pid not in self.stopped_at_disk and disk.held(box.scratch, box.uid, limit) > limit:
                self.stopped_at_disk.add(pid)
                processes.kill_group(pid)

    def ended(self, pid: int) -> None:
        box = self.live.pop(pid, None)
        if box is None:
            return   # an orphan of some sandbox, re-parented to us (subreaper) and now reaped
        if box.memory_group:   # read before its removal, which also kills whatever of the box is left
            self.peak = max(self.peak, memcg.peak(box.memory_group))
            if box.memory_group in self.stopping or memcg.over_limit(box.memory_group):
                self.stopped_at_limit += 1
            self.stopping.discard(box.memory_group)
            with contextlib.suppress(OSError):
                memcg.remove(box.memory_group)
        if not self.plan.has("pid"):
            if box.uid is not None:
                processes.kill_user(box.uid)
            else:
                processes.kill_children_except({self.trusted_pid, *self.live})
        if box.uid is not None and not (self.plan.has("mnt") and self.plan.has("landlock")):
            cleanup.clean_shared_folders(box.uid)   # as its own user: nothing else can be touched
        if box.uid is not None and not self.plan.has("ipc"):
            cleanup.remove_ipc_of(box.uid)
        if not self.plan.has("mnt"):
            cleanup.clean_folder(box.scratch, box.uid)

    def retire(self, pid: int) -> None:
        """Kill a sandbox and wait until it and everything it started are gone (its end swept as ended() does), so
        that the sandbox taking over never runs student code beside it."""
        if pid not in self.live:
            return   # already ended and swept
        processes.kill_group(pid)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        self.ended(pid)

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


def _fits(spare: Spare, second: bool) -> bool:
    """Whether a waiting sandbox suits a call: the second device warm in it for a call on that device; for a call
    on the CPU, one that warmed up nothing, so that one which did waits for the second-device tests (the engine
    runs them last), unless every sandbox is warm anyway (the template warmed the device up: not the first
    submission of a run)."""
    return spare.second_warm == second or (not second and sandbox.second_device_is_warm())


def _spare_for(spares: collections.deque, *, second: bool) -> Spare | None:
    """Take a waiting sandbox that fits the call (_fits), a cold one first; None when none does."""
    for spare in sorted(spares, key=lambda waiting: waiting.second_warm):   # the cold ones first
        if _fits(spare, second):
            spares.remove(spare)
            return spare
    return None


def _serve(control, trusted_pid: int, boxes: Boxes, clock: LoadFreeClock, net: float) -> tuple[int | None, str]:
    """Answer spawn requests until the trusted process exits, or kill it once the clock passes the net, or the wall
    clock the wall net (Limits.wall_net); (its exit status, which net stopped it: "" where none did).

    The first sandbox is started right away, so it locks down while the trusted process starts pytest; the
    first request gets it. Where the template has not warmed up the second device (a GPU run: its boxes warm
    nothing, the GPU starts in the first that uses it), that first sandbox is one for the CPU and a second one is
    started for the second device; it takes over at the first call that needs that device (the engine runs those
    tests last). One more waits for the suite's
    second opinions (start_afresh), and another takes its place whenever one is handed over. A waiting sandbox is
    locked down but runs no student code until the trusted side takes it over (messages.Go): no two sandboxes of
    a submission run student code at the same time, so none can pass another what it saw."""
    listening = [control]
    ended = processes.exit_notice(trusted_pid)   # readable once it has exited: no poll's sleep after its last word
    next_reading = 0.0
    spares = collections.deque([boxes.spawn(control, warm_second=False)])
    if not spares[0].second_warm:
        spares.append(boxes.spawn(control))
    # For the suite's first second opinion (start_afresh): it locks down meanwhile.
    spares.append(boxes.spawn(control, warm_second=False))
    try:
        while True:
            boxes.watch()
            status = boxes.reap()
            if status is not None:
                return os.waitstatus_to_exitcode(status), ""
            if time.monotonic() > next_reading:   # a reading walks the process tree: twice a second is enough
                next_reading = time.monotonic() + 0.5
                boxes.watch_disk()
                passed = clock.past(net, boxes.settings.limits.wall_net(net))
                if passed:
                    os.kill(trusted_pid, 9)
                    os.waitpid(trusted_pid, 0)
                    return None, passed
            ready, _, _ = select.select(listening + ended, [], [], 0.05)
            if control not in ready:
                if not listening and not ended:
                    time.sleep(0.01)
                continue
            try:
                message = control.recv(16)
            except OSError:
                message = b""
            if not message:
                listening = []   # the trusted process is finishing
                continue
            waiting = {spare.pid for spare in spares}
            for pid in [pid for pid in boxes.live if pid not in waiting]:
                boxes.retire(pid)   # the one the trusted side let go: gone, and swept, before another takes over
            handed = _spare_for(spares, second=message == SECOND_WANTED) or boxes.spawn(
                control, warm_second=message == SECOND_WANTED)
            try:
                socket.send_fds(control, [SPAWNED.pack(handed.pid, handed.second_warm)],
                                [handed.sock_fd, handed.out_fd])
            finally:
                handed.close_fds()
            if not any(_fits(spare, second=False) for spare in spares):   # the next start_afresh finds one waiting
                spares.append(boxes.spawn(control, warm_second=False))
    finally:
        for spare in spares:
            spare.close_fds()
        for fd in ended:
            os.close(fd)
