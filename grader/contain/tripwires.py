"""The sandbox's tripwires: what student code tried that an instructor should look at.

Installed in the sandbox just before it imports the submission. A Python audit hook notes
attempts to reach outside the box (opening or listing paths outside its allowlist, signals to
other processes, sockets, starting programs, loading native code) and snooping through the
garbage collector; fingerprints of torch's comparison and attention functions and of the
engine's own sandbox code note tampering. The kernel layers are what stop an escape; these
notes only tell, and code in the sandbox can silence them: they become flags, never points.
"""
from __future__ import annotations

import os
import sys
import sysconfig
import types

LIMIT = 20   # notes kept per sandbox
WATCHED = {
    "torch": ("allclose", "equal", "isclose", "matmul", "softmax", "where"),   # not manual_seed: torch rewraps it
    "torch.Tensor": ("__eq__", "__ne__", "__sub__", "allclose", "equal", "isclose", "abs", "masked_fill"),
    "torch.nn.functional": ("scaled_dot_product_attention", "softmax", "dropout", "linear"),
    "torch.testing": ("assert_close",),
}
ESCAPE_EVENTS = {"os.kill": "signal", "os.killpg": "signal", "signal.pthread_kill": "signal",
                 "socket.connect": "network", "socket.bind": "network", "socket.sendto": "network",
                 "subprocess.Popen": "program", "os.system": "program", "os.exec": "program",
                 "os.posix_spawn": "program", "ctypes.dlopen": "native code", "ctypes.call_function": "native code"}
SNOOP_EVENTS = ("gc.get_objects", "gc.get_referrers", "gc.get_referents")


class Tripwires:
    def __init__(self, submission: str, readable: list[str], modules: dict[str, object]):
        self.student = os.path.realpath(submission).rstrip(os.sep) + os.sep
        # Python's own library: a frame there (pathlib, importlib) acts for whoever called it.
        self.stdlib = (*{os.path.realpath(sysconfig.get_paths()[key]).rstrip(os.sep) + os.sep
                         for key in ("stdlib", "platstdlib")}, "<frozen")
        self.roots = tuple(os.path.realpath(path).rstrip(os.sep) + os.sep for path in [submission, *readable])
        # The functions of the engine's own sandbox modules, listed once (a drain after every call reads only
        # these: walking every module each time took a quarter of the sandbox's own time per call)
        self.engine = [(f"{module_name}.{name}", module, name) for module_name, module in modules.items()
                       for name, value in vars(module).items() if callable(value) and not name.startswith("__")]
        self.notes: list[str] = []
        self.busy = False
        self.fingerprint = self._fingerprint()

    def install(self) -> None:
        sys.addaudithook(self._hook)

    def drain(self) -> list[str]:
        """The notes since the last drain, with any tampering found now."""
        now = self._fingerprint()
        for name, held in self.fingerprint.items():
            if now.get(name) is not held:
                self._note(f"tampering: {name} was replaced")
        self.fingerprint = now
        notes, self.notes = self.notes, []
        return notes

    def _note(self, text: str) -> None:
        if len(self.notes) < LIMIT and text not in self.notes:
            self.notes.append(text)

    def _fingerprint(self) -> dict[str, object]:
        """Each watched function and each of the engine's, held: one put in another's place is not the one held.
        (One whose code is swapped in place stays the same object: the audit hook sees that swap.) Neither id()
        nor reading a function's __code__: each raises an audit event, and the hook ran for every function at every
        drain, a fifth of the sandbox's time per call."""
        found: dict[str, object] = {}
        for owner, names in WATCHED.items():
            target = _resolve(owner)
            for name in names:
                found[f"{owner}.{name}"] = getattr(target, name, None)
        for key, module, name in self.engine:
            found[key] = getattr(module, name, None)
        return found

    def _hook(self, event: str, args: tuple) -> None:
        if self.busy or len(self.notes) >= LIMIT:
            return
        self.busy = True
        try:
            self._look(event, args)
        except BaseException:  # noqa: BLE001 - a tripwire must never break the student's call
            pass
        finally:
            self.busy = False

    def _look(self, event: str, args: tuple) -> None:
        if event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes)):
            path = os.fsdecode(args[0])
            if not self._inside(path) and not _looking_up_source() and self._student_asked():
                self._note(f"escape attempt: {event} {path[:200]}")
        elif event in ESCAPE_EVENTS:
            if event in ("os.kill", "os.killpg") and args and args[0] in (0, os.getpid()):
                return
            detail = " ".join(str(a)[:80] for a in args[:2])
            self._note(f"escape attempt ({ESCAPE_EVENTS[event]}): {event} {detail}")
        elif event in SNOOP_EVENTS:
            self._note(f"snooping: {event}")
        elif event == "object.__setattr__" and args and (args[1] == "__code__" or self._student_did_it()):
            # A function's code swapped in place is tampering whoever's frame did it (code the student exec'd, a
            # helper): neither torch nor the engine ever does it.
            owner = getattr(args[0], "__module__", "") or getattr(args[0], "__name__", "")
            if isinstance(owner, str) and owner.split(".")[0] in ("torch", "numpy", "grader"):
                self._note(f"tampering: set {getattr(args[0], '__qualname__', type(args[0]).__name__)}.{args[1]}")

    def _student_did_it(self) -> bool:
        """Whether the submission's own code made the change: the frame that raised the event is the student's.
        (Torch imports modules lazily, inside student calls, and those imports set attributes of their own
        classes: with the student's code only somewhere below on the stack, that is not the student's doing.)"""
        caller = sys._getframe(3)   # 0 this, 1 _look, 2 _hook, 3 the code that set the attribute
        return caller.f_code.co_filename.startswith(self.student)

    def _student_asked(self) -> bool:
        """Whether the first frame outside Python's own library that led to this event is the submission's: torch
        reading /proc/sys/kernel/random/boot_id while it compiles is not the student's doing (seen with torch
        2.11), the student's pathlib.Path(...).read_text() is."""
        frame: types.FrameType | None = sys._getframe(3)   # 0 this, 1 _look, 2 _hook, 3 the code that raised it
        while frame is not None and frame.f_code.co_filename.startswith(self.stdlib):
            frame = frame.f_back
        return frame is not None and frame.f_code.co_filename.startswith(self.student)

    def _inside(self, path: str) -> bool:
        full = os.path.abspath(path)
        if full.startswith(("/proc/self/", "/dev/null", "/dev/urandom", "/dev/zero")) or full == "/proc/self":
            return True
        return (full + os.sep).startswith(self.roots)


def _looking_up_source() -> bool:
    """Python itself reads source files to show a warning or a traceback line: not an escape."""
    frame: types.FrameType | None = sys._getframe(3)
    while frame is not None:
        if frame.f_code.co_filename.endswith(("linecache.py", "tokenize.py", "traceback.py")):
            return True
        frame = frame.f_back
    return False


def _resolve(dotted: str):
    module, _, attribute = dotted.partition(".")
    target = sys.modules.get(module)
    for part in attribute.split(".") if attribute else ():
        target = getattr(target, part, None)
    return target
