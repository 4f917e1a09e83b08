"""The sandbox process: locks itself down, imports one submission and answers calls from the trusted grader.

It is forked from a template that has torch imported but has never seen the hidden tests or the
reference. Right after the fork it leaves the grader's session, keeps only its socket and output
pipe, forgets the project's modules and paths, and applies the run's isolation plan
(isolation.enter and isolation.lock: namespaces, private mounts, IPC limits, rlimits, its own
user id, Landlock). Only then does it import the student's code. Calls arrive as typed messages
(messages.py) and run through executor.py; what goes back is plain data for the trusted side to
check. If the plan cannot be applied it says so (Broken) and runs nothing.
"""
from __future__ import annotations

import importlib
import os
import pathlib
import socket
import sys
import tempfile
import warnings

import torch

from grader import sanitize
from grader.contain import isolation, processes, tripwires
from grader.paths import REPO
from grader.run.run_settings import gpu_environment
from grader.wire import checks_runner, emulated, executor, messages, protocol
from grader.wire.messages import CallReply, CallRequest, ChecksReply, ChecksRequest, Failure, ModuleReply, Ready

_SELF = sys.modules[__name__]   # kept: the project's entries of sys.modules are dropped before student code runs
PROJECT_PACKAGES = ("student", "grading_tests", "assignment", "grader", "autograder", "tests", "benchmarks", "examples")


_warm = {"cpu": False, "second device": False}


def warm_up(*, emulated_device: bool = True) -> None:
    """Run the torch paths student code typically needs once on the CPU, and the wire, so forked sandboxes
    (and the trusted process) start warm. Once per template. emulated_device: register the emulated second device
    (not in a GPU run: registered beside CUDA it would take CUDA's place as torch's accelerator)."""
    if _warm["cpu"]:
        return
    if emulated_device:
        emulated.install()   # the template never touches CUDA: every sandbox forked from it has the second device
    torch.set_num_threads(1)
    q = torch.randn(2, 3, 4, 8, requires_grad=True)
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    scores = (torch.matmul(q, q.transpose(-2, -1)) * 8 ** -0.5).masked_fill(~mask, float("-inf"))
    weights = torch.nn.functional.dropout(torch.softmax(scores, dim=-1), 0.1)
    torch.nn.Linear(8, 8)(weights @ q) + torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    q.transpose(1, 2).reshape(2, 4, 24).view(2, 4, 3, 8).permute(0, 2, 1, 3).contiguous()
    torch.where(mask, scores, torch.zeros(())).sum(-1, keepdim=True)
    # No backward: the template's first backward would start autograd's thread for each device, the emulated
    # one too, and a process forked from it could then run no backward at all (autograd refuses after a fork).
    torch.einsum("bhld,bhsd->bhls", q.detach().half(), q.detach().half())
    torch.nn.functional.scaled_dot_product_attention(q.double(), q.double(), q.double(), is_causal=True)
    request = messages.CallRequest("scaled_scores", (torch.ones(2, dtype=torch.bfloat16), torch.float16), {})
    messages.decode(protocol.decode(request.encode()[protocol.LENGTH.size:], views=True), *messages.REQUESTS)
    _warm["cpu"] = True


def second_device_is_warm() -> bool:
    return _warm["second device"]


def warm_up_second_device() -> None:
    """The emulated device's first operations (a few milliseconds; torch's look-up of distributed tensors before a
    tensor subclass's first operation, half a second, is answered by emulated.install): once per template, or, in
    a sandbox forked before the template did it, in the sandbox itself."""
    if _warm["second device"]:
        return
    device = emulated.device()
    q = torch.randn(2, 3, 4, 8).to(device)
    mask = torch.ones(4, 4, dtype=torch.bool, device=device).tril()
    scores = (torch.matmul(q, q.transpose(-2, -1)) * 8 ** -0.5).masked_fill(~mask, float("-inf"))
    out = torch.nn.functional.dropout(torch.softmax(scores, dim=-1), 0.1) @ q
    out = out + torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    torch.nn.Linear(8, 8).to(device)(out)
    torch.tensor([2, 3], device=device).tolist()
    # No backward here: autograd runs a device's backward in a thread of its own, which a fork cannot carry.
    _warm["second device"] = True


# Where CUDA cannot start in a locked-down box, every GPU test would fail for a reason that is not the student's: the
# box runs nothing, and its row is the grader's error (graded again by the next run), never a score.
CUDA_DID_NOT_START = ("CUDA does not start in a sandbox given a GPU here; grade without --gpu (the GPU tests are then "
                      "reported as not run) until it does")


def start_cuda(gpu: int) -> str:
    """Start CUDA on the box's GPU in the box's own process, locked down, before any student code runs (the template
    it was forked from never touched CUDA): a kernel really runs. "" when it did, else what failed, in torch's words.
    Its CPU time is the engine's: the trusted side starts counting the student's only after the box is locked."""
    os.environ.update(gpu_environment(gpu))   # read by the driver when CUDA starts, so set before
    try:
        torch.cuda.init()
        torch.ones(1, device="cuda").add_(1).item()
    except Exception as error:  # noqa: BLE001 - whatever stops CUDA here is the machine's, not the student's
        return sanitize.printable(f"{type(error).__name__}: {error}", limit=400)
    return ""


def _installation_paths() -> list[str]:
    """The sys.path folders of the Python installation (stdlib, site-packages), never the project's own.

    A virtual environment may live inside the repository (.venv): its folders are installation.
    """
    prefixes = {os.path.realpath(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    repo = str(REPO) + os.sep
    keep = []
    for path in sys.path:
        if not path or not os.path.isdir(path):
            continue
        real = os.path.realpath(path) + os.sep
        inside = [prefix for prefix in prefixes if real.startswith(prefix)]
        if inside and (not real.startswith(repo) or any(prefix.startswith(repo) for prefix in inside)):
            keep.append(path)
    return keep


def _forget_project(submission: str, keep_handles: bool) -> None:
    """Drop the project's modules and paths; keep only the Python installation importable.

    keep_handles: the sandbox's own user cannot reach the installation when it lies under a folder
    closed to it (the repository, root's 0700 home), so each kept import path is opened now, as
    root, and used as /proc/self/fd/N: that reaches the folder itself, not its parents.
    """
    for name in [n for n in sys.modules if n.split(".")[0] in PROJECT_PACKAGES]:
        del sys.modules[name]
    keep = _installation_paths()
    if keep_handles:
        handles = {p: f"/proc/self/fd/{os.open(p, os.O_RDONLY | os.O_DIRECTORY)}" for p in keep}
        def moved(path: str) -> str:
            return next((h + path[len(p):] for p, h in handles.items() if path == p or path.startswith(p + os.sep)),
                        path)

        keep = [handles[p] for p in keep]
        for module in list(sys.modules.values()):
            search = getattr(module, "__path__", None)
            if isinstance(search, list):
                search[:] = [moved(entry) for entry in search]
    sys.path[:] = [submission, *keep]
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()


def _own_descriptors(sock_fd: int, out_fd: int) -> int:
    """Make stdout/stderr the output pipe, stdin /dev/null, close everything else; returns the socket fd."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    new_sock = os.dup2(sock_fd, 3, inheritable=False) if sock_fd != 3 else 3
    os.closerange(4, 65536)
    return new_sock


def run(sock_fd: int, out_fd: int, box: isolation.Box, plan: isolation.Plan, *, warm_second: bool = True) -> None:
    """Body of the forked sandbox process; never returns. warm_second=False skips the second device's warm-up
    (a first sandbox serving the CPU tests while another one warms up): a call there then pays it once."""
    code = 0
    try:
        processes.die_with_parent(os.getppid())   # the worker
        os.setsid()
        sock = socket.socket(fileno=_own_descriptors(sock_fd, out_fd))
        try:
            isolation.enter(plan)          # with a PID namespace, the rest runs in the box's init
            submission, home = box.view(plan)
            _forget_project(submission, keep_handles=plan.has("uid"))
            isolation.lock(plan, box)
        except OSError as error:
            sock.sendall(messages.Broken(f"the sandbox could not apply {plan.line()!r}: {error}").encode())
            return
        if box.gpu is not None and (failure := start_cuda(box.gpu)):
            sock.sendall(messages.Broken(f"{CUDA_DID_NOT_START} ({plan.line()}): {failure}").encode())
            return
        sock.sendall(messages.Locked().encode())   # the engine's last word: student code may write here from now on
        os.chdir(home)
        os.umask(0o077)
        os.environ.clear()
        # USER and LOGNAME: the box's user id is in no password database, and code that asks who runs it
        # (getpass.getuser(), which torch.compile's caches call in torch 2.11) must get an answer, not a KeyError.
        os.environ.update({"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
                           "OMP_NUM_THREADS": "1", "USER": "sandbox", "LOGNAME": "sandbox", **gpu_environment(box.gpu),
                           **{name: os.path.join(home, folder) for name, folder in isolation.CACHE_FOLDERS.items()}})
        # Its own folder, named rather than found: tempfile finds one by creating a file in each candidate, which a
        # box that may write nothing (seccomp.py) fails at, and the template's choice may be a folder it cannot use.
        tempfile.tempdir = home
        executor.disable_compilation()
        sys.dont_write_bytecode = True
        sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115 - for good
        sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115 - for good
        if box.gpu is None:   # no GPU: its second device is the emulated one (the template's)
            emulated.install()
            if warm_second:
                warm_up_second_device()   # under the sandbox's limits, before the submission is imported
        warnings.showwarning = _shown_at_the_students_line(submission, warnings.showwarning)
        wires = tripwires.Tripwires(submission, [home, *isolation.installation_roots()],
                                    {"executor": executor, "protocol": protocol, "messages": messages,
                                     "sandbox": _SELF})
        wires.install()
        serve(sock, wires, submission)
    except BaseException:  # noqa: BLE001 - the sandbox ends here whatever happened
        code = 1
    finally:
        os._exit(code)


def _shown_at_the_students_line(submission: str, show):
    """warnings.showwarning for the sandbox: a warning placed in the engine's own files (torch warns from C++ at the
    innermost Python frame, which for a torch call in student code is the executor's watch) is shown at the line of
    the student's code that made it, as it would be in the student's own run, not at a path of the grader's files.
    One with no student frame on the stack (the engine's own) is shown without its place."""
    root = submission.rstrip(os.sep) + os.sep
    engine = str(REPO / "grader") + os.sep

    def shown(message, category, filename, lineno, file=None, line=None):
        if str(filename).startswith(engine) and not str(filename).startswith(root):
            frame = sys._getframe(1)
            while frame is not None and not frame.f_code.co_filename.startswith(root):
                frame = frame.f_back
            filename, lineno, line = (frame.f_code.co_filename, frame.f_lineno, None) if frame else ("<grader>", 0, "")
        show(message, category, filename, lineno, file, line)
    return shown


def serve(sock, wires: tripwires.Tripwires, submission: str) -> None:
    reader = protocol.FrameReader(sock, views=True)   # requests: tensors keep the layouts the tests gave them
    try:   # a spare waits here, locked down, its student code not yet run, until the trusted side takes it over
        messages.decode(reader.read(None), messages.Go)
    except protocol.ProtocolError:   # closed (a spare never used) or not the trusted side's word
        return
    try:
        student, unloadable = executor.import_student()   # a module that fails costs only its own names
    except BaseException as error:  # noqa: BLE001 - SystemExit at import is an import failure too
        _flush()
        said = _as_students(_describe(error), submission)
        sock.sendall(Failure(type(error).__name__[:100], said, wires.drain()).encode())
        return
    _flush()
    sock.sendall(Ready({name: _as_students(why, submission) for name, why in unloadable.items()},
                       wires.drain()).encode())
    while True:
        try:
            request = messages.decode(reader.read(None), *messages.REQUESTS)
        except protocol.Closed:
            return
        reply = answer(student, request, wires, submission)
        _flush()
        try:
            data = reply.encode()
        except BaseException as error:  # noqa: BLE001 - a value the wire cannot carry, or a student's patch
            why = _as_students(executor.StudentFailure.of(error).message, submission)
            data = Failure("TypeError", f"the result could not be sent back: {why}", wires.drain()).encode()
        sock.sendall(data)


def answer(student, request, wires: tripwires.Tripwires, submission: str):
    try:
        if isinstance(request, ChecksRequest):   # the handout's public checks, which decide no points
            return ChecksReply(checks_runner.run(submission, request.files), wires.drain())
        if isinstance(request, CallRequest):
            called = executor.execute_call(student, request.function, request.args, request.kwargs, request.options)
            return CallReply(called.value, called.devices, called.input_grads, called.args_after,
                             called.attention_calls, wires.drain())
        ran = executor.execute_module(student, request.spec, request.options)
        return ModuleReply(ran.parameters, ran.output, ran.devices, ran.input_grads, ran.param_grads,
                           ran.inputs_after, ran.attention_calls, wires.drain(), ran.sdpa_calls)
    except BaseException as error:  # noqa: BLE001 - everything the student raises is reported, even SystemExit
        failure = error if isinstance(error, executor.StudentFailure) else executor.StudentFailure.of(error)
        return Failure(failure.type_name, _as_students(failure.message, submission), wires.drain())


def _as_students(text: str, submission: str) -> str:
    """A message's paths as the student knows them: the box's copy of the submission (/tmp/submission/student/x.py)
    is student/x.py, where the student's own files are."""
    return text.replace(submission.rstrip(os.sep) + os.sep, "")


def _describe(error: BaseException) -> str:
    if isinstance(error, SyntaxError):
        where = pathlib.Path(error.filename or "?").name
        return f"{error.msg} ({where}, line {error.lineno})"
    return executor.StudentFailure.of(error).message


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - the student may have replaced or closed its streams
            continue

