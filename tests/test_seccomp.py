"""The seccomp layer (grader/contain/seccomp.py): each rule refuses what it names, in a child that installs the
filter, and nothing else a box needs; the same calls without the filter succeed (the defence off)."""
import ctypes
import errno
import fcntl
import os
import platform
import signal
import socket
import threading

import pytest

from grader.contain import kernel, processes, seccomp

pytestmark = pytest.mark.skipif(platform.machine() not in seccomp.ARCHITECTURES,
                                reason="the engine's filter knows x86_64's system calls only")


def system_v_segment() -> None:
    """Make a private System V shared-memory segment and remove it again."""
    libc = ctypes.CDLL(None, use_errno=True)
    segment = libc.shmget(0, 4096, 0o1000 | 0o600)   # IPC_PRIVATE, IPC_CREAT
    if segment < 0:
        raise OSError(ctypes.get_errno(), "shmget")
    libc.shmctl(segment, 0, None)                     # IPC_RMID


def attempts(folder: str, parent: int) -> dict:
    """What a box might try: name -> a call."""
    bait = os.path.join(folder, "bait")
    return {
        "read a file": lambda: open(bait, "rb").read(),
        "lock a file it reads": lambda: fcntl.flock(open(bait, "rb"), fcntl.LOCK_SH | fcntl.LOCK_NB),
        "lock a byte range": lambda: fcntl.lockf(open(bait, "rb"), fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 0),
        "read a file's flags": lambda: fcntl.fcntl(open(bait, "rb"), fcntl.F_GETFL),
        "write a file": lambda: open(bait, "ab").close(),
        "create a file": lambda: open(os.path.join(folder, "new"), "xb").close(),
        "make a folder": lambda: os.mkdir(os.path.join(folder, "folder")),
        "change permissions": lambda: os.chmod(bait, 0o644),
        "remove a file": lambda: os.unlink(bait),
        "open a socket": lambda: socket.socket().close(),
        "a connected pair": lambda: [end.close() for end in socket.socketpair()],
        "a System V segment": system_v_segment,
        "signal the grader": lambda: os.kill(parent, 0),
        "signal everyone": lambda: os.kill(-1, 0),
        "signal itself": lambda: os.kill(os.getpid(), 0),
        "signal its group": lambda: os.killpg(0, 0),
        "raise a signal": lambda: signal.raise_signal(signal.SIGWINCH),
        "a thread": lambda: (lambda t: (t.start(), t.join()))(threading.Thread(target=lambda: None)),
        "fork": lambda: (lambda pid: os._exit(0) if pid == 0 else os.waitpid(pid, 0))(os.fork()),
        "lower its priority": lambda: os.setpriority(os.PRIO_PROCESS, 0, 19),
        "pin itself to one CPU": lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}),
        "bind a socket to a path": lambda: socket.socketpair()[0].bind(os.path.join(folder, "planted")),
        "a new namespace": lambda: kernel.unshare(kernel.CLONE_NEWUSER),
    }


def outcomes(folder, rules: seccomp.Rules | None) -> dict:
    """name -> "ok" or the errno's name, as a child with the filter (None: without it) saw them."""
    with open(os.path.join(folder, "bait"), "w") as handle:
        handle.write("a file\n")
    parent = os.getpid()

    def attempted() -> dict:
        seen = {}
        os.setsid()
        if rules is not None:
            seccomp.install(seccomp.Rules(os.getpid(), **rules))
        for name, attempt in attempts(str(folder), parent).items():
            try:
                attempt()
                seen[name] = "ok"
            except OSError as error:
                seen[name] = errno.errorcode.get(error.errno, str(error.errno))
        return seen
    answer = processes.answer_of_child(attempted)
    assert answer is not None, "the child died before it could answer"
    return answer


ALWAYS_REFUSED = {"lock a file it reads", "lock a byte range", "a new namespace", "lower its priority",
                  "pin itself to one CPU"}
ALWAYS_ALLOWED = {"read a file", "read a file's flags", "a connected pair", "signal itself", "signal its group",
                  "raise a signal", "a thread"}
BY_RULE = {"signals": {"signal the grader", "signal everyone"}, "sockets": {"open a socket"},
           "ipc": {"a System V segment"},
           "writing": {"write a file", "create a file", "make a folder", "remove a file", "change permissions",
                       "bind a socket to a path"},
           "forks": {"fork"}}


@pytest.mark.parametrize("rule", [None, *BY_RULE], ids=lambda rule: rule or "every layer held")
def test_the_filter_refuses_what_its_rules_name_and_nothing_a_box_needs(tmp_path, rule):
    seen = outcomes(tmp_path, dict.fromkeys([rule], True) if rule else {})
    refused = {name for name, outcome in seen.items() if outcome != "ok"}
    assert refused == ALWAYS_REFUSED | BY_RULE.get(rule, set()), seen
    assert all(seen[name] == "EPERM" for name in refused), seen


def test_without_the_filter_every_refused_call_succeeds(tmp_path):
    """The defence off: as root nothing above is refused but the namespace (no user namespaces here would not
    matter: the filter refuses it before the kernel is asked)."""
    seen = outcomes(tmp_path, None)
    refusable = ALWAYS_REFUSED - {"a new namespace"} | set().union(*BY_RULE.values()) - {"signal everyone"}
    assert {name for name in refusable if seen[name] != "ok"} == set(), seen


def test_the_rules_follow_the_layers_that_held():
    every = ("pid", "ipc", "net", "mnt", "landlock", "uid", "memory")
    assert seccomp.rules_for(every, 7) == seccomp.Rules(7)
    assert seccomp.rules_for(("uid", "memory"), 7) == seccomp.Rules(7, signals=True, sockets=True, ipc=True)
    assert seccomp.rules_for(("memory",), 7) == seccomp.Rules(7, signals=True, sockets=True, ipc=True, writing=True)
    # Landlock keeps the writes; without the memory cgroup nothing would count a forked child's CPU time
    assert seccomp.rules_for(("pid", "ipc", "net", "landlock"), 7) == seccomp.Rules(7, forks=True)
