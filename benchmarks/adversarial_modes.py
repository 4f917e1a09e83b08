"""The adversarial zoo graded in each mode a course may run the engine in, as tests/test_engine.py grades it as root:

    root       as root, every layer this kernel gives (uid, pid, ipc, net, mnt, landlock, memory)
    container  as root in a container like Gradescope's Docker: unshare refused, no Landlock (the seccomp filter
               of tests/test_engine_isolation.py)
    user       as an ordinary user (nobody): no uid layer, no cgroup, the namespaces an unprivileged user may make
    weakest    as an ordinary user in that container: no namespace, no Landlock, no uid, no cgroup: the seccomp
               filter is the one layer left

    python benchmarks/adversarial_modes.py [--modes root container user]

For each mode: the run's isolation line, the time it took, and every expectation of the zoo the batch missed
(adversarial.verify: an expectation whose only defence is a layer the line says the kernel refused asks only
for honesty there). Entries that would hurt an unisolated grader are written only where it runs as root. Exits 1
when any mode missed any expectation.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from autograder.adversarial import read_rows, remove_planted, verify, write_adversarial_zoo  # noqa: E402
from tests.test_engine import MEMORY_GB, TIMEOUT, clean_up_after  # noqa: E402
from tests.test_engine_isolation import deny_namespaces_and_landlock  # noqa: E402

NOBODY = 65534
MODES = ("root", "container", "user", "weakest")
AS_NOBODY = ("user", "weakest")


def as_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def grade_in(mode: str, scratch: pathlib.Path) -> tuple[list[str], str, float]:
    """(problems, isolation line, seconds) of the zoo graded in one mode."""
    root, out = scratch / mode / "zoo", scratch / mode / "out"
    expectations = write_adversarial_zoo(root, isolated=mode not in AS_NOBODY)
    if mode in AS_NOBODY:   # the zoo and the output folder are the ordinary user's own
        for path in (scratch, scratch / mode):
            os.chmod(path, 0o755)
        out.mkdir()
        for path in (root, out, *root.rglob("*"), *out.rglob("*")):
            os.lchown(path, NOBODY, NOBODY)
    preexec = {"root": None, "container": deny_namespaces_and_landlock, "user": as_nobody,
               "weakest": lambda: (deny_namespaces_and_landlock(), as_nobody())}[mode]
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(root), "--out", str(out),
                               "--workers", "2", "--timeout", TIMEOUT, "--memory-gb", MEMORY_GB, "--no-similarity"],
                              cwd=REPO, capture_output=True, text=True, preexec_fn=preexec,
                              env={**os.environ, "HOME": str(scratch / mode)})
        seconds = time.monotonic() - started
        if proc.returncode != 0:
            return [f"the batch exited {proc.returncode}: {proc.stderr[-1500:]}"], "", seconds
        line = read_rows(out)["reference"]["isolation"]
        return verify(expectations, out), line, seconds
    finally:
        clean_up_after(expectations)
        remove_planted(root)


def user_cannot_run() -> str:
    """Why the ordinary user cannot run this checkout's Python on the repository ("" when it can)."""
    try:
        proc = subprocess.run([sys.executable, "-c", "import autograder"], cwd="/", capture_output=True, text=True,
                              preexec_fn=as_nobody, env={"PYTHONPATH": str(REPO)})
    except OSError as error:
        return str(error)
    return "" if proc.returncode == 0 else (proc.stderr.strip().splitlines() or ["no output"])[-1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("adversarial_modes: run as root (the root modes need it, and the user mode drops to nobody)")
        return 2
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="adversarial-modes-"))
    missed = 0
    try:
        for mode in args.modes:
            why = user_cannot_run() if mode in AS_NOBODY else ""
            if why:
                print(f"{mode}: not run: the ordinary user cannot run this Python on this checkout ({why}); give it a "
                      f"Python and a checkout it can read")
                continue
            problems, line, seconds = grade_in(mode, scratch)
            missed += len(problems)
            print(f"{mode}: {seconds:.0f} s; isolation: {line}")
            for problem in problems:
                print(f"  MISSED {problem}")
            if not problems:
                print("  every expectation held")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
