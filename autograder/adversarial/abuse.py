"""Resource abuse on top of the reference, in one function: it must cost that function's points and nothing else.

The abusive function misbehaves only when the grader calls it: the package's own modules
(MultiHeadAttention calls split_heads, expand_padding_mask, causal_mask) get the correct one,
so every other part must score exactly what the reference scores in the same batch.
Entries whose clean-up needs the sandbox's own user id (detached children, files left in
/tmp) are written only when the engine runs as root.
"""
from __future__ import annotations

import textwrap

from autograder.adversarial.base import Context, Entry
from autograder.adversarial.expectations import Expectation
from autograder.samples import reference_source, write_submission
from grader.paths import STUDENT_DIR

SLEEPER = ("/bin/sleep", "4242.4242")   # what the fork bomb's detached children run
WRAPPER = '''

import os as _abuse_os
import sys as _abuse_sys

_abuse_done = set()
_correct_{name} = {name}


def {name}(*args, **kwargs):
    """Abusive only when the grader calls it; the package's own modules get the correct function."""
    if _abuse_sys._getframe(1).f_globals.get("__name__", "").startswith("student"):
        return _correct_{name}(*args, **kwargs)
{body}
    return _correct_{name}(*args, **kwargs)
'''
LOOP = "while True:\n    pass"
ALLOCATE = "hog = torch.ones(8 << 30, dtype=torch.uint8)  # 8 GiB, every page written\nhog[-1] = 1"
EXIT = "_abuse_os._exit(3)"
PRINT = """\
if "printed" not in _abuse_done:
    _abuse_done.add("printed")
    for _ in range(100):
        _abuse_sys.stdout.write("spam" * (1 << 18))   # 1 MiB each, 100 MiB in all
    _abuse_sys.stdout.flush()"""
FORK_BOMB = f"""\
if "forked" not in _abuse_done:
    _abuse_done.add("forked")
    for _ in range(1000):
        try:
            child = _abuse_os.fork()
        except OSError:
            break
        if child == 0:
            try:
                _abuse_os.setsid()   # leave the sandbox's process group
                _abuse_os.execv({SLEEPER[0]!r}, ["sleep", {SLEEPER[1]!r}])
            finally:
                _abuse_os._exit(0)"""
LITTER = """\
if "littered" not in _abuse_done:
    _abuse_done.add("littered")
    for folder in ("/tmp", "/dev/shm"):
        try:
            with open(f"{{folder}}/{litter}", "wb") as handle:
                handle.write(bytes(1 << 20))
        except OSError:
            pass"""
MUTATE = """\
result = _correct_{name}(*args, **kwargs).clone()
with torch.no_grad():
    args[0].fill_(float("nan"))   # the caller's tensor, after the correct answer is taken
return result"""


def abusive(module: str, name: str, body: str, **names):
    """A writer of the reference with `name` in `module` running `body` first when the grader calls it."""
    body = textwrap.indent(body.format(name=name, **names), "    ")
    text = reference_source(module) + WRAPPER.format(name=name, body=body)

    def write(dest, _context: Context):
        write_submission(dest, overrides={module: text})
    return write


def _at_import(code: str):
    def write(dest, _context: Context):
        write_submission(dest, overrides={"__init__.py": code + (STUDENT_DIR / "__init__.py").read_text()})
    return write


def _abuse(name, module, function, body, part, why, status="graded", message="") -> Entry:
    expectation = Expectation(name, "abuse", status, why, baseline="reference", lost_parts=(part,) if part else (),
                              message=message)
    return Entry(expectation, abusive(module, function, body))


def entries(context: Context) -> list[Entry]:
    sleeper = " ".join(("sleep", SLEEPER[1]))
    litter = f"{context.markers.name}-litter"
    return [
        _abuse("abuse-loop-in-split_heads", "heads.py", "split_heads", LOOP, 3,
               "an infinite loop: the call times out, later calls are refused", "timeout", "timed out"),
        _abuse("abuse-8gib-in-merge_heads", "heads.py", "merge_heads", ALLOCATE, 3,
               "allocates 8 GiB: refused by the memory limit"),
        _abuse("abuse-exit-in-expand_padding_mask", "padding.py", "expand_padding_mask", EXIT, 4,
               "os._exit mid-call: the sandbox is replaced and the remaining tests go on", message="restarted"),
        _abuse("abuse-print-100mb-in-scaled_scores", "scaling.py", "scaled_scores", PRINT, None,
               "prints 100 MiB once: captured, truncated, no points lost"),
        _abuse("abuse-mutate-input-in-split_heads", "heads.py", "split_heads", MUTATE, 3,
               "overwrites its input with NaN after answering: only the in-place check fails"),
        Entry(Expectation("abuse-fork-bomb-in-causal_mask", "abuse", "graded",
                          "forks detached children until the process limit: contained, killed at the end",
                          baseline="reference", forbidden_process=sleeper),
              abusive("masking.py", "causal_mask", FORK_BOMB), needs_root=True),
        Entry(Expectation("abuse-litter-from-padding_mask", "abuse", "graded",
                          "leaves files in /tmp and /dev/shm: removed when its grading ends", baseline="reference",
                          forbidden_paths=(f"/tmp/{litter}", f"/dev/shm/{litter}")),
              abusive("masking.py", "padding_mask", LITTER, litter=litter), needs_root=True),
        Entry(Expectation("abuse-sys-exit-at-import", "abuse", "error", "sys.exit(0) while importing",
                          score=0.0, message="SystemExit"),
              _at_import("import sys\n\nsys.exit(0)\n")),
        Entry(Expectation("abuse-os-exit-at-import", "abuse", "error", "os._exit(0) while importing",
                          score=0.0, message="importing"),
              _at_import("import os\n\nos._exit(0)\n")),
        Entry(Expectation("abuse-loop-at-import", "abuse", "timeout", "an infinite loop while importing",
                          score=0.0, message="importing"),
              _at_import("while True:\n    pass\n")),
    ]
