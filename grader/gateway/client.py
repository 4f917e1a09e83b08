"""SandboxGateway: the hidden suite's `student` fixture, answered by a sandbox process.

Runs in the trusted grading process. Each call is sent as a typed message of plain data (so the
caller's tensors never leave this process: the sandbox gets copies) and answered within the
limits, measured from here: the sandbox's own CPU time (all its processes, read from /proc) per
call and per submission, and a generous cap on its load-free time (load_free.py) for code that
sleeps. Every answer is checked (replies.py) before the test sees it. A timeout or a dead sandbox becomes StudentError
for that call; the next call starts a fresh sandbox.
"""
from __future__ import annotations

import builtins
import os
import socket
import struct
from dataclasses import dataclass, field
from typing import NoReturn, TypeVar

from grader import sanitize
from grader.contain import processes
from grader.contain.limits import Limits
from grader.contain.load_free import LoadFreeClock
from grader.gateway import (
    FUNCTIONS,
    MODULE_CLASS,
    CallOptions,
    Gateway,
    StudentError,
    not_imported,
    replies,
)
from grader.wire import emulated, messages, protocol
from grader.wire.messages import Broken, CallRequest, ChecksRequest, Failure, Go, Locked, ModuleRequest, Ready

Reply = TypeVar("Reply", messages.CallReply, messages.ModuleReply, messages.ChecksReply)
SPAWNED = struct.Struct("!q?")   # a sandbox handed over: its pid, and whether the second device is warm in it
SECOND_WANTED, CPU_ONLY = b"spawn:second", b"spawn:cpu"   # what a request for a sandbox says it is for
NOTES_KEPT = 20
PROC_FILES_KEPT = 64   # descriptors of a sandbox's /proc files kept open: four for each process, a few processes
SECOND = emulated.NAME
GRADED_NAMES = {*FUNCTIONS, MODULE_CLASS}
# Why a sandbox started after hidden calls had run does not report its import in its own words: those words could
# carry what an earlier sandbox saw of the hidden tests, and an import's report reaches the row's message, which
# students read at once.
LATE_IMPORT = ("it had imported in the first one; the words of an import that ran after hidden tests are not "
               "shown")
# ... nor where the sandbox can read the grader's files (no uid, mnt or landlock layer): its words could carry the
# hidden tests themselves.
UNGUARDED_IMPORT = ("its words are not shown: on this grader a sandbox can read the grader's files, the hidden "
                    "tests among them")


class EngineStepFailed(Exception):
    """An exchange the engine makes before any student code runs (the box's lock-down) timed out or ended: the
    engine's failure, never charged to the student."""


@dataclass
class SessionLog:
    """What happened to the sandboxes of one submission (decides status, message and flags)."""
    import_failure: StudentError | None = None
    unloadable: dict[str, str] = field(default_factory=dict)   # graded names whose module failed to import -> why
    timeouts: list[str] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)   # calls whose answer was malformed or forged
    broken: str | None = None                            # a sandbox could not lock itself down (the engine's fault)
    budget_exhausted: bool = False
    student_seconds: float = 0.0                         # CPU seconds of student code
    student_wall_seconds: float = 0.0                    # its load-free seconds (load_free.py): sleeping counts
    sandboxes: int = 0
    output: bytearray = field(default_factory=bytearray)
    output_total: int = 0
    notes: list[str] = field(default_factory=list)       # the sandboxes' tripwire notes (self-reported)

    def note(self, texts) -> None:
        for text in texts:
            clean = sanitize.printable(text, limit=240)
            if len(self.notes) < NOTES_KEPT and clean not in self.notes:
                self.notes.append(clean)


class Spawner:
    """Asks the worker (our parent) for a sandbox: it answers with the sandbox's pid, our end of its socket and
    the read end of its output pipe (the first one was started before we asked, so it is already warm)."""

    def __init__(self, control: socket.socket):
        self.control = control

    def spawn(self, second: bool = True):
        """(pid, socket, output pipe's read end, whether the second device is warm in it); second: the call it is
        for runs on the second device (the worker keeps one waiting for that device where the template has not warmed
        it up)."""
        self.control.sendall(SECOND_WANTED if second else CPU_ONLY)
        message, fds, _flags, _addr = socket.recv_fds(self.control, SPAWNED.size, 2)
        if len(message) != SPAWNED.size or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            raise RuntimeError("the grading worker went away")
        pid, second_warm = SPAWNED.unpack(message)
        return pid, socket.socket(fileno=fds[0]), fds[1], second_warm


@dataclass
class Sandbox:
    """The sandbox answering now: its process (the leader of its group), its socket, the pipe of its output, and the
    /proc files of its process tree, read after every call through descriptors kept open (processes.ProcFiles)."""
    pid: int
    sock: socket.socket
    out_fd: int
    reader: protocol.FrameReader
    proc: processes.ProcFiles = field(default_factory=lambda: processes.ProcFiles(keep=PROC_FILES_KEPT))


class SandboxGateway(Gateway):
    def __init__(self, spawner: Spawner, limits: Limits, log: SessionLog, *, words_shown: bool = True,
                 second_device: str | None = None):
        """words_shown: an import's report may be shown in its own words (False where a sandbox can read the
        grader's files: isolation.Plan.hides_the_graders_files). second_device: "cuda" where the sandboxes are given
        a GPU (a GPU run); None: the emulated device."""
        super().__init__()
        if second_device is not None:
            self.second_device = second_device
        self.words_shown = words_shown
        self.spawner, self.limits, self.log = spawner, limits, log
        self.box: Sandbox | None = None     # the sandbox answering now (None: the next call starts one)
        self.second_warm = False             # whether the second device is warm in the current sandbox
        self.seen = processes.TreeReading(0.0, {})   # the sandbox's tree at the end of the last exchange
        self.strikes: dict[str, int] = {}    # timeouts per function
        self.asked = False                   # whether any hidden call has reached a sandbox yet

    # ------------------------------------------------------------------ Gateway
    def call(self, function, args=(), kwargs=None, options=CallOptions()):
        args = tuple(args)
        request = CallRequest(function, args, dict(kwargs or {}), options)
        reply = self._request(function, request, messages.CallReply)
        result = self._checked(function, lambda: replies.call_result(reply, args, options.device))
        self.note_path("manual", reply.attention_calls)
        return result

    def run_module(self, spec, options=CallOptions()):
        label = "MultiHeadAttention"
        reply = self._request(label, ModuleRequest(spec, options), messages.ModuleReply)
        result = self._checked(label, lambda: replies.module_result(reply, spec.forward_kwargs, options.device))
        self.note_module(spec, options.device, reply)
        return result

    def public_checks(self, files: list[str]) -> dict[str, str]:
        """The handout's public checks of these files of student/tests/, run by pytest in the sandbox
        (checks_runner.py): node id -> outcome, as the sandbox says it, within one call's limits; the caller keeps
        only what it knows (public_checks.py). Raises StudentError as a call does."""
        label = f"the public checks of {files[0]}" if len(files) == 1 else "the public checks"
        return self._request(label, ChecksRequest(list(files)), messages.ChecksReply).outcomes

    def start_afresh(self) -> None:
        """The current sandbox is killed and the next call goes to a new one (the worker keeps one waiting, locked
        down, its student code not yet imported): of two answers a test compares, the second comes from a process
        that never saw the first. No two sandboxes of a submission run student code at the same time."""
        self._discard()

    # ------------------------------------------------------------------ plumbing
    def _checked(self, label: str, check):
        """check() reads an answer the sandbox sent: whatever goes wrong in it is that answer's refusal."""
        try:
            return check()
        except protocol.ProtocolError as error:
            self._refuse(label, str(error))
        except Exception as error:  # noqa: BLE001 - data from the sandbox that the checks did not foresee
            self._refuse(label, f"an answer the checks could not read ({type(error).__name__})")

    def _refuse(self, label: str, why: str) -> NoReturn:
        """Fail the call over a malformed or forged answer: only code that bypasses the sandbox's own
        sender produces one, so that sandbox is retired, and after a few the function is not called again
        (each would cost a fresh sandbox)."""
        self._discard()
        self.log.refusals.append(label)
        raise StudentError("ProtocolError", f"the answer of {label} was refused: {sanitize.printable(why)}") from None

    def _refuse_if_hopeless(self, label: str) -> None:
        # Always a fresh exception: re-raising one object would grow its traceback with every test.
        failure = self.log.import_failure
        if self.log.broken is not None:
            raise StudentError("GraderError", self.log.broken)
        if failure is not None:
            raise StudentError(failure.type_name, failure.message)
        if label in self.log.unloadable:
            raise not_imported(label, self.log.unloadable[label])
        if self.log.budget_exhausted:
            raise StudentError("Timeout", f"the submission's time budget ({self.budget_words()}) is used up; "
                                          "this call was not run")
        if self.strikes.get(label, 0) >= self.limits.timeout_strikes:
            raise StudentError("Timeout", f"{label} timed out {self.strikes[label]} times already; not called again")
        refused = self.log.refusals.count(label)
        if refused >= self.limits.refusal_strikes:
            raise StudentError("ProtocolError", f"the answers of {label} were refused {refused} times already; "
                                                "not called again")

    def _request(self, label: str, request: CallRequest | ModuleRequest | ChecksRequest,
                 expected: type[Reply]) -> Reply:
        self._refuse_if_hopeless(label)
        if self.box is not None and not self.second_warm and uses_second_device(request):
            self._discard()   # a sandbox that has warmed up the second device is waiting: no student pays for it
        if self.box is None:
            self._start(uses_second_device(request))
            self._refuse_if_hopeless(label)
        data = request.encode()   # serialising copies every tensor: ours stay untouched
        self.asked = True
        try:
            reply = messages.decode(self._exchange(label, data), expected, Failure)
        except protocol.ProtocolError as error:
            self._refuse(label, str(error))
        if isinstance(reply, Failure):
            self.log.note(reply.events)
            raise StudentError(sanitize.printable(reply.type_name, limit=100),
                               sanitize.printable(reply.message, newlines=True, limit=2000))
        if not isinstance(reply, expected):   # decode let only these two through
            self._refuse(label, f"a {type(reply).__name__} where a {expected.__name__} was expected")
        self.log.note(reply.events)
        return reply

    def _exchange(self, label: str, data: bytes | None, *, charged: bool = True):
        """Send data (None: just wait, for the sandbox's first word) and wait for one reply, within two limits
        measured here, neither of which load can reach: at most call_timeout CPU seconds of the sandbox, and at most
        call_wall_timeout seconds of its load-free time (wall-clock time less its waits for a CPU: code that
        sleeps); each less if the submission's budget of either is nearly spent. charged=False: the time is the
        engine's (the box's lock-down), not added to the student's."""
        # The engine's own step is held to one call's limits, never to what is left of the student's budget.
        cpu_left = self.limits.budget - self.log.student_seconds if charged else self.limits.call_timeout
        wall_left = self.limits.budget - self.log.student_wall_seconds if charged else self.limits.call_wall_timeout
        cpu_cap = min(self.limits.call_timeout, cpu_left)
        wall_cap = min(self.limits.call_wall_timeout, wall_left)
        started = self.seen
        box = self.box
        if box is None:
            raise RuntimeError(f"{label}: no sandbox to ask")   # the grader's own mistake: _start comes first
        # From the reading at the end of the last exchange: the sandbox has only been waiting for this one since.
        clock = LoadFreeClock(box.pid, started.waits)

        def over() -> bool:
            now = processes.read_tree(box.pid, box.proc)
            return now.cpu - started.cpu > cpu_cap or clock.elapsed(now.waits) > wall_cap

        try:
            if data is not None:
                box.sock.sendall(data)
            return box.reader.read(None, over=over)
        except protocol.TimedOut:
            spent = processes.tree_cpu_seconds(box.pid, box.proc) - started.cpu
            computing = spent > cpu_cap
            self._discard()
            if not charged:   # no student code has run: the engine's step failed, and none of it is the student's
                raise EngineStepFailed(f"the sandbox's {label} did not finish within one call's limits") from None
            self.log.student_seconds += spent
            if (computing and cpu_cap < self.limits.call_timeout) or (
                    not computing and wall_cap < self.limits.call_wall_timeout):
                self.log.budget_exhausted = True
                self.stopped = f"the submission's time budget ({self.budget_words()}) ran out during {label}"
                raise StudentError("Timeout", self.stopped) from None
            self.log.timeouts.append(label)
            self.strikes[label] = self.strikes.get(label, 0) + 1
            if computing:
                raise StudentError("Timeout", f"{label} used more than {self.limits.call_timeout:g} s of CPU time") \
                    from None
            raise StudentError("Timeout", f"{label} did not finish within {self.limits.call_wall_timeout:g} s "
                                          "(it was waiting or sleeping, not computing; time spent waiting for "
                                          "a busy machine's CPU is not counted)") from None
        except (protocol.Closed, OSError):
            self._discard()
            if not charged:
                raise EngineStepFailed(f"the sandbox ended during its {label}") from None
            self.log.crashes.append(label)
            raise StudentError("Crashed", f"the process running your code ended during {label} "
                                          "(exit, crash, or stopped for using too much memory or disk)") from None
        except protocol.ProtocolError as error:
            self._refuse(label, str(error))
        finally:
            now = processes.read_tree(box.pid, box.proc)   # one walk of /proc for both limits
            if charged:
                self.log.student_wall_seconds += clock.elapsed(now.waits)
            if self.box is not None:   # not discarded meanwhile
                if charged:
                    self.log.student_seconds += max(0.0, now.cpu - started.cpu)
                self.seen = now

    def budget_words(self) -> str:
        return (f"{self.limits.budget:g} s of CPU time, and as long of wall-clock time not spent waiting for "
                f"a busy machine's CPU")

    def _start(self, second: bool) -> None:
        pid, sock, out_fd, self.second_warm = self.spawner.spawn(second)
        self.box = Sandbox(pid, sock, out_fd, protocol.FrameReader(sock, {out_fd: self._keep_output}))
        self.seen = processes.read_tree(pid, self.box.proc)   # what it did before we asked is not the student's
        self.log.sandboxes += 1
        try:   # what only the engine may say comes first, before any student code runs; then the import's report
            # Until it is locked only the engine runs there (a GPU box starts CUDA): not the student's time.
            ready = messages.decode(self._exchange("lock down", None, charged=False), Locked, Broken)
            if isinstance(ready, Locked):   # it imports the submission only now, timed as the student's
                ready = messages.decode(self._exchange("import student", Go().encode()), Ready, Failure)
        except EngineStepFailed as failure:   # as a Broken reply: the grader's error, graded again by the next run
            self.log.broken = str(failure)
            return
        except StudentError as error:
            if error.type_name == "Timeout":
                error = StudentError("Timeout", f"importing student did not finish: {error.message}")
            elif error.type_name == "Crashed":
                error = StudentError("Crashed", "the process ended while importing student (exit or crash at import)")
            self.log.timeouts = [t for t in self.log.timeouts if t != "import student"]
            self.log.crashes = [c for c in self.log.crashes if c != "import student"]
            self.log.import_failure = error
            return
        except protocol.ProtocolError as error:   # after Locked only student code writes anything else
            self.log.refusals.append("import student")
            detail = "" if self._withheld() else f" ({error})"   # its words may be the student's
            self.log.import_failure = StudentError("ProtocolError", f"the sandbox's report on importing student was "
                                                   f"refused{detail}: did the submission write to the grader's socket?")
            self._discard()
            return
        if isinstance(ready, Broken):
            self.log.broken = sanitize.printable(ready.reason, limit=500)
        elif isinstance(ready, Failure):
            self.log.note(ready.events)
            withheld = self._withheld()
            self.log.import_failure = StudentError(_builtin_name(ready.type_name), f"importing student failed: "
                                                   f"{withheld}") if withheld else \
                StudentError(sanitize.printable(ready.type_name, limit=100), "importing student failed: "
                             + sanitize.printable(ready.message, newlines=True, limit=1000))
        elif isinstance(ready, Ready):
            self.log.note(ready.events)
            for name in GRADED_NAMES & set(ready.unloadable):   # what the sandbox says costs only itself
                withheld, said = self._withheld(), ready.unloadable[name]
                why = f"{_builtin_name(said.split(':', 1)[0])}: it could not be imported ({withheld})" if withheld \
                    else sanitize.printable(said, limit=500)
                self.log.unloadable.setdefault(name, why)
            return
        self._discard()

    def _withheld(self) -> str:
        """Why this sandbox's import report is not shown in its own words ("": it is)."""
        if self.asked:
            return f"in a new sandbox: {LATE_IMPORT}"
        return "" if self.words_shown else UNGUARDED_IMPORT

    def _keep_output(self, chunk: bytes) -> None:
        self.log.output_total += len(chunk)
        room = self.limits.output_bytes - len(self.log.output)
        if room > 0:
            self.log.output += chunk[:room]

    def _discard(self) -> None:
        """Kill the sandbox and everything it started; the next call starts a new one. (The worker, which
        forked it, reaps it and sweeps up whatever it left.)"""
        box, self.box = self.box, None
        if box is None:
            return
        processes.kill_group(box.pid)
        box.reader.drain_side()
        box.sock.close()
        os.close(box.out_fd)
        box.proc.close()

    def close(self) -> None:
        self._discard()


def _builtin_name(type_name: str) -> str:
    """The name of an exception raised at import when its words are withheld: a builtin exception's own name
    (SyntaxError, SystemExit: what the student needs to look for), any other name (the student's to choose, so it
    could carry what the code read) as ImportError."""
    found = getattr(builtins, type_name, None)
    return type_name if isinstance(found, type) and issubclass(found, BaseException) else "ImportError"


def uses_second_device(request) -> bool:
    """Whether a call runs on the emulated second device: asked to (the call's device, the default device), or
    told to (a device argument). The public checks run on the CPU."""
    if isinstance(request, ChecksRequest):
        return False
    if SECOND in (request.options.device.split(":")[0], (request.options.default_device or "").split(":")[0]):
        return True
    arguments = [*getattr(request, "args", ()), *getattr(request, "kwargs", {}).values()]
    return any(isinstance(a, str) and a.split(":")[0] == SECOND for a in arguments)   # a device travels as its name
