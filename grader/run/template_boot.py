"""The template's start: the command's first act is to exec a fresh Python that imports torch (over a second), so
that the import runs beside everything the batch does before its first job (pool.py says why a fresh program).

It imports nothing but os, sys and the raw socket module: the command calls start() before it loads the rest of
the engine (argparse, dataclasses, json and the engine's own modules took 25-40 ms, all of it before the fork).
"""
from __future__ import annotations

import _socket
import os
import sys

# The engine's processes run on the CPU (a sandbox opens no GPU device file): CUDA hidden from torch, so that on a
# GPU machine torch.cuda.is_available() is simply False there, not an error of a driver it cannot reach (seen on
# an H100). Set in the template's environment (here) and again in each sandbox's (sandbox.py). In a GPU run
# (--gpu) a job's trusted process and its sandboxes see the one GPU the job was given (run_settings.gpu_environment).
NO_GPU = {"CUDA_VISIBLE_DEVICES": ""}
# The template's environment: nothing of the grader's but the library path, which torch may need to load.
KEPT_VARIABLES = ("LD_LIBRARY_PATH",)
# The template's whole command line besides the interpreter: it reads the rest from its socket (argv[1]), a
# message of the batch's pid and the module path, NUL-separated.
BOOT = ("import os, socket, sys\n"
        "control = socket.socket(fileno=int(sys.argv[1]))\n"
        "size = int.from_bytes(control.recv(4, socket.MSG_WAITALL), 'big')\n"
        "parent, *path = map(os.fsdecode, control.recv(size, socket.MSG_WAITALL).split(b'\\0'))\n"
        "sys.path[:] = path\n"
        "from grader.run.pool import start_template\n"
        "start_template(control, int(parent))\n")


def template_environment() -> dict[str, str]:
    kept = {name: os.environ[name] for name in KEPT_VARIABLES if name in os.environ}
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", **NO_GPU, **kept}


def start() -> tuple[int, int]:
    """Fork and exec the template: (its pid, the batch's end of its control socket as a descriptor), the boot
    message already sent."""
    ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            ours.close()
            os.set_inheritable(theirs.fileno(), True)
            os.execve(sys.executable, [sys.executable, "-c", BOOT, str(theirs.fileno())], template_environment())
        finally:
            os._exit(1)   # the batch notices the closed socket
    theirs.close()
    boot = b"\0".join([str(parent).encode(), *map(os.fsencode, sys.path)])
    ours.sendall(len(boot).to_bytes(4, "big") + boot)
    return pid, ours.detach()
