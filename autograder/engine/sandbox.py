"""The sandbox process: imports one submission and answers calls from the trusted grader.

It is forked from a template that has torch imported but has never seen the hidden
tests or the reference. Right after the fork it leaves the grader's session, keeps
only its socket and output pipe, forgets the project's modules and paths, applies
rlimits and, as root, becomes an unprivileged user of its own. Only then does it
import the student's code. The calls run through the public executor functions of
grading_tests/gateway.py, loaded as a standalone module (they hold no expected values).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import pathlib
import sys

import torch

from autograder.engine import isolation, protocol
from autograder.paths import REPO

GATEWAY_SOURCE = REPO / "grading_tests" / "gateway.py"
EXECUTOR_NAME = "_sandbox_executor"
PROJECT_PACKAGES = ("student", "grading_tests", "assignment", "autograder", "tests", "benchmarks", "examples")


def load_executor(source: pathlib.Path = GATEWAY_SOURCE):
    """grading_tests/gateway.py as a standalone module, without importing the grading_tests package."""
    spec = importlib.util.spec_from_file_location(EXECUTOR_NAME, source)
    module = importlib.util.module_from_spec(spec)
    sys.modules[EXECUTOR_NAME] = module
    spec.loader.exec_module(module)
    return module


def warm_up() -> None:
    """Run the torch paths student code typically needs once, so forked sandboxes start warm."""
    torch.set_num_threads(1)
    q = torch.randn(2, 3, 4, 8, requires_grad=True)
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    scores = (q @ q.transpose(-2, -1) / 8 ** 0.5).masked_fill(~mask, float("-inf"))
    weights = torch.nn.functional.dropout(torch.softmax(scores, dim=-1), 0.1)
    linear = torch.nn.Linear(8, 8)
    out = linear(weights @ q) + torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    out.sum().backward()
    torch.einsum("bhld,bhsd->bhls", q.half(), q.half())
    torch.empty(2, 3, device="meta") @ torch.empty(3, 2, device="meta")
    protocol.decode(protocol.encode({"w": torch.ones(2, dtype=torch.bfloat16), "d": torch.float16})[8:])


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


def _forget_project(private_dir: str, keep_handles: bool) -> None:
    """Drop the project's modules and paths; keep only the Python installation importable.

    keep_handles: the sandbox user cannot reach the installation when it lies under a folder
    closed to it (the repository, root's 0700 home), so each kept import path is opened now,
    as root, and used as /proc/self/fd/N: that reaches the folder itself, not its parents.
    """
    for name in [n for n in sys.modules if n.split(".")[0] in PROJECT_PACKAGES]:
        del sys.modules[name]
    keep = _installation_paths()
    if keep_handles:
        handles = {p: f"/proc/self/fd/{os.open(p, os.O_RDONLY | os.O_DIRECTORY)}" for p in keep}
        moved = lambda path: next((h + path[len(p):] for p, h in handles.items()
                                   if path == p or path.startswith(p + os.sep)), path)
        keep = [handles[p] for p in keep]
        for module in list(sys.modules.values()):
            search = getattr(module, "__path__", None)
            if isinstance(search, list):
                search[:] = [moved(entry) for entry in search]
    sys.path[:] = [private_dir, *keep]
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()


def _allow_proc_self() -> None:
    """After a uid change the kernel makes /proc/self root's; the import handles need it to be ours."""
    import ctypes
    PR_SET_DUMPABLE = 4
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)


def _own_descriptors(sock_fd: int, out_fd: int) -> int:
    """Make stdout/stderr the output pipe, stdin /dev/null, close everything else; returns the socket fd."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    new_sock = os.dup2(sock_fd, 3, inheritable=False) if sock_fd != 3 else 3
    os.closerange(4, 65536)
    return new_sock


def run(sock_fd: int, out_fd: int, private_dir: str, uid: int | None, limits: isolation.Limits, executor) -> None:
    """Body of the forked sandbox process; never returns."""
    code = 0
    worker = os.getppid()
    try:
        os.setsid()
        sock_fd = _own_descriptors(sock_fd, out_fd)
        import socket
        sock = socket.socket(fileno=sock_fd)
        _forget_project(private_dir, keep_handles=uid is not None)
        os.environ.clear()
        os.environ.update({"PATH": "/usr/bin:/bin", "HOME": private_dir, "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"})
        os.chdir(private_dir)
        os.umask(0o077)
        isolation.apply_limits(limits)
        if uid is not None:
            isolation.drop_privileges(uid)
            _allow_proc_self()
        isolation.die_with_parent(worker)   # after the uid change, which would clear it
        sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)
        serve(sock, executor)
    except BaseException:  # noqa: BLE001 - the sandbox ends here whatever happened
        code = 1
    finally:
        os._exit(code)


def serve(sock, executor) -> None:
    try:
        student = executor.import_student()   # every graded name resolved: a broken module fails here
    except BaseException as error:  # noqa: BLE001 - SystemExit at import is an import failure too
        _flush()
        protocol.send(sock, {"ready": False, "error": [type(error).__name__, _describe(error)]})
        return
    _flush()
    protocol.send(sock, {"ready": True})
    reader = protocol.FrameReader(sock)
    while True:
        try:
            request = reader.read(None)
        except protocol.Closed:
            return
        reply = answer(student, executor, request)
        _flush()
        try:
            data = protocol.encode(reply)
        except BaseException as error:  # noqa: BLE001 - e.g. the student replaced torch.save
            data = protocol.encode({"ok": False, "error": [type(error).__name__, f"result could not be sent: {error}"]})
        sock.sendall(data)


def _describe(error: BaseException) -> str:
    if isinstance(error, SyntaxError):
        where = pathlib.Path(error.filename or "?").name
        return f"{error.msg} ({where}, line {error.lineno})"
    return str(error)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            pass


def answer(student, executor, request: dict) -> dict:
    try:
        opts = request["options"]
        options = executor.CallOptions(device=opts["device"], seed=opts["seed"], forbid_fused=opts["forbid_fused"],
                                       grad_outputs=opts["grad_outputs"], sdpa_backend=opts["sdpa_backend"])
        if request["kind"] == "call":
            result = executor.execute_call(student, request["function"], request["args"], request["kwargs"], options)
            return {"ok": True, "value": wire(result.value, executor), "devices": [str(d) for d in result.devices],
                    "input_grads": wire(result.input_grads, executor), "inputs_mutated": list(result.inputs_mutated)}
        spec = executor.ModuleSpec(**request["spec"])
        result = executor.execute_module(student, spec, options)
        return {"ok": True, "parameters": {str(k): tuple(int(s) for s in v) for k, v in result.parameters.items()},
                "submodules": {str(k): str(v) for k, v in result.submodules.items()},
                "output": result.output, "devices": [str(d) for d in result.devices],
                "input_grads": wire(result.input_grads, executor), "param_grads": wire(result.param_grads, executor),
                "inputs_mutated": [str(k) for k in result.inputs_mutated]}
    except executor.StudentError as error:
        return {"ok": False, "error": [str(error.type_name), str(error.message)]}
    except BaseException as error:  # noqa: BLE001
        return {"ok": False, "error": [type(error).__name__, str(error)]}


def wire(value, executor):
    """The value as plain data the other side can load: containers collapse to list/tuple/dict."""
    if isinstance(value, torch.Tensor):
        return executor.plain_result(value)
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, (int, float)) and type(value).__module__ in ("numpy", "builtins"):
        return float(value) if isinstance(value, float) else int(value)
    if isinstance(value, tuple):
        return tuple(wire(item, executor) for item in value)
    if isinstance(value, list):
        return [wire(item, executor) for item in value]
    if isinstance(value, dict):
        return {str(key): wire(item, executor) for key, item in value.items()}
    raise executor.StudentError("TypeError", f"returned a {type(value).__name__}, which the grader cannot accept")
