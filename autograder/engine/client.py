"""SandboxGateway: the hidden suite's `student` fixture, answered by a sandbox process.

Runs in the trusted grading process. Each call is sent as plain data (so the
caller's tensors never leave this process: the sandbox gets copies), answered within
the per-call timeout, loaded with weights_only and checked before the test sees it.
A timeout or a dead sandbox becomes StudentError for that call; the next call
starts a fresh sandbox.
"""
from __future__ import annotations

import os
import socket
import struct
import time
from dataclasses import dataclass, field

from autograder.engine import isolation, protocol, replies
from grading_tests.gateway import CallOptions, Gateway, StudentError

PID = struct.Struct("!q")


@dataclass
class SessionLog:
    """What happened to the sandboxes of one submission (decides status and message)."""
    import_failure: StudentError | None = None
    timeouts: list[str] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)   # calls whose answer was malformed or forged
    budget_exhausted: bool = False
    student_seconds: float = 0.0
    sandboxes: int = 0
    output: bytearray = field(default_factory=bytearray)
    output_total: int = 0


class Spawner:
    """Asks the clean template process (our parent) to fork a sandbox wired to fresh descriptors."""

    def __init__(self, control: socket.socket):
        self.control = control

    def spawn(self):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out_read, out_write = os.pipe()
        try:
            socket.send_fds(self.control, [b"spawn"], [theirs.fileno(), out_write])
            reply = b""
            while len(reply) < PID.size:
                chunk = self.control.recv(PID.size - len(reply))
                if not chunk:
                    raise RuntimeError("the grading template went away")
                reply += chunk
        finally:
            theirs.close()
            os.close(out_write)
        return PID.unpack(reply)[0], ours, out_read


class SandboxGateway(Gateway):
    def __init__(self, spawner: Spawner, limits: isolation.Limits, log: SessionLog, uid: int | None):
        self.spawner, self.limits, self.log, self.uid = spawner, limits, log, uid
        self.pid = self.sock = self.reader = self.out_fd = None
        self.strikes: dict[str, int] = {}    # timeouts per function

    # ------------------------------------------------------------------ Gateway
    def call(self, function, args=(), kwargs=None, options=CallOptions()):
        reply = self._request(function, {"kind": "call", "function": function, "args": tuple(args),
                                          "kwargs": dict(kwargs or {}), "options": _options(options)})
        return self._checked(function, replies.call_result, reply, len(args))

    def run_module(self, spec, options=CallOptions()):
        payload = {"init_kwargs": spec.init_kwargs, "state_dict": spec.state_dict, "forward_kwargs": spec.forward_kwargs,
                   "training": spec.training, "dtype": spec.dtype}
        reply = self._request("MultiHeadAttention", {"kind": "module", "spec": payload, "options": _options(options)})
        return self._checked("MultiHeadAttention", replies.module_result, reply)

    # ------------------------------------------------------------------ plumbing
    def _checked(self, label: str, check, reply, *args):
        """check(reply, *args); a refused answer fails the call."""
        try:
            return check(reply, *args)
        except protocol.ProtocolError as error:
            self._refuse(label, str(error))

    def _refuse(self, label: str, why: str):
        """Fail the call over a malformed or forged answer: only code that bypasses the sandbox's own
        sender produces one, so that sandbox is retired, and after a few the function is not called again
        (each would cost a fresh sandbox)."""
        self._discard()
        self.log.refusals.append(label)
        raise StudentError("ProtocolError", f"the answer of {label} was refused: {why}") from None

    def _refuse_if_hopeless(self, label: str) -> None:
        # Always a fresh exception: re-raising one object would grow its traceback with every test.
        failure = self.log.import_failure
        if failure is not None:
            raise StudentError(failure.type_name, failure.message)
        if self.log.budget_exhausted:
            raise StudentError("Timeout", f"the submission's time budget ({self.limits.budget:g} s) is used up")
        if self.strikes.get(label, 0) >= self.limits.timeout_strikes:
            raise StudentError("Timeout", f"{label} timed out {self.strikes[label]} times already; not called again")
        refused = self.log.refusals.count(label)
        if refused >= self.limits.refusal_strikes:
            raise StudentError("ProtocolError", f"the answers of {label} were refused {refused} times already; "
                                                "not called again")

    def _request(self, label: str, request: dict) -> dict:
        self._refuse_if_hopeless(label)
        if self.sock is None:
            self._start()
            self._refuse_if_hopeless(label)
        data = protocol.encode(request)   # serialising copies every tensor: ours stay untouched
        reply = self._exchange(label, data)
        if not isinstance(reply, dict) or type(reply.get("ok")) is not bool:
            self._refuse(label, "not a reply")
        if not reply["ok"]:
            error = reply.get("error")
            if not (isinstance(error, list) and len(error) == 2 and all(type(e) is str for e in error)):
                self._refuse(label, "a malformed error")
            raise StudentError(protocol.text(error[0], "error type", 100), protocol.text(error[1], "error message", 2000))
        return reply

    def _exchange(self, label: str, data: bytes | None):
        """Send data (None: just wait, for the import), wait for one reply within the time limits."""
        left = self.limits.budget - self.log.student_seconds
        wait = min(self.limits.call_timeout, left)
        started = time.monotonic()
        try:
            if data is not None:
                self.sock.sendall(data)
            return self.reader.read(started + wait)
        except protocol.TimedOut:
            self._discard()
            if wait < self.limits.call_timeout:
                self.log.budget_exhausted = True
                raise StudentError("Timeout", f"the submission's time budget ({self.limits.budget:g} s) ran out "
                                              f"during {label}") from None
            self.log.timeouts.append(label)
            self.strikes[label] = self.strikes.get(label, 0) + 1
            raise StudentError("Timeout", f"{label} did not finish within {self.limits.call_timeout:g} s") from None
        except (protocol.Closed, OSError):
            self._discard()
            self.log.crashes.append(label)
            raise StudentError("Crashed", f"the process running your code ended during {label} "
                                          "(exit, crash, or killed for using too much memory)") from None
        except protocol.ProtocolError as error:
            self._refuse(label, str(error))
        finally:
            self.log.student_seconds += time.monotonic() - started

    def _start(self) -> None:
        self.pid, self.sock, self.out_fd = self.spawner.spawn()
        self.log.sandboxes += 1
        self.reader = protocol.FrameReader(self.sock, {self.out_fd: self._keep_output})
        try:
            ready = self._exchange("import student", None)
        except StudentError as error:
            if error.type_name == "Timeout":
                error = StudentError("Timeout", f"importing student did not finish within {self.limits.call_timeout:g} s")
            elif error.type_name == "Crashed":
                error = StudentError("Crashed", "the process ended while importing student (exit or crash at import)")
            self.log.timeouts = [t for t in self.log.timeouts if t != "import student"]
            self.log.crashes = [c for c in self.log.crashes if c != "import student"]
            self.log.import_failure = error
            return
        if not isinstance(ready, dict) or ready.get("ready") is not True:
            error = ready.get("error") if isinstance(ready, dict) else None
            if isinstance(error, list) and len(error) == 2 and all(type(e) is str for e in error):
                failure = StudentError(protocol.text(error[0], "error type", 100),
                                       "importing student failed: " + protocol.text(error[1], "error message", 1000))
            else:
                failure = StudentError("ProtocolError", "the sandbox did not report on importing student")
            self.log.import_failure = failure
            self._discard()

    def _keep_output(self, chunk: bytes) -> None:
        self.log.output_total += len(chunk)
        room = self.limits.output_bytes - len(self.log.output)
        if room > 0:
            self.log.output += chunk[:room]

    def _discard(self) -> None:
        """Kill the sandbox and everything it started; the next call starts a new one."""
        if self.pid is None:
            return
        isolation.kill_group(self.pid)
        if self.uid is not None:
            isolation.kill_user(self.uid)
        self.reader.drain_side()
        self.sock.close()
        os.close(self.out_fd)
        self.pid = self.sock = self.reader = self.out_fd = None

    def close(self) -> None:
        self._discard()


def _options(options: CallOptions) -> dict:
    grads = options.grad_outputs
    return {"device": str(options.device), "seed": int(options.seed), "forbid_fused": bool(options.forbid_fused),
            "grad_outputs": tuple(grads) if grads is not None else None,
            "sdpa_backend": None if options.sdpa_backend is None else str(options.sdpa_backend)}

