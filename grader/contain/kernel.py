"""The Linux system calls the sandbox needs and Python 3.11 does not wrap, through ctypes.

Each function raises OSError (with errno) when the kernel refuses, so callers can tell
"not supported here" (ENOSYS, EOPNOTSUPP, EINVAL) from "not allowed here" (EPERM, as in a
container whose seccomp profile refuses namespaces). Constants are from the kernel's uapi
headers (linux/sched.h, linux/mount.h, linux/prctl.h, linux/capability.h, linux/landlock.h);
the syscall numbers of Landlock are the same on every architecture.

PyPI's `landlock` (1.0.0.dev5, a pre-release) covers Landlock ABI 1 only (no network rules,
no signal scoping), so the three Landlock calls are made here directly.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import stat

_libc = ctypes.CDLL(None, use_errno=True)


def privileged() -> bool:
    """Root: every capability, a user id per box, cgroups to make."""
    return os.geteuid() == 0

# ---------------------------------------------------------------- namespaces (unshare(2))
CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000


def _check(result: int, what: str) -> int:
    if result == -1:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")
    return result


def unshare(flags: int) -> None:
    """Move this (single-threaded) process into new namespaces; a new PID namespace applies to its next child."""
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


# ---------------------------------------------------------------- mounts (mount(2))
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_libc.mount(_bytes(source), _bytes(target), _bytes(fstype), ctypes.c_ulong(flags), _bytes(data)),
           f"mount {target}")


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


# ---------------------------------------------------------------- prctl(2)
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4


def prctl(option: int, arg2: int = 0, arg3: int = 0) -> None:
    _check(_libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), ctypes.c_ulong(arg3), ctypes.c_ulong(0),
                       ctypes.c_ulong(0)), f"prctl({option})")


# ---------------------------------------------------------------- System V shared memory (shmctl(2))
_IPC_INFO = 3


class _ShmInfo(ctypes.Structure):
    _fields_ = [("shmmax", ctypes.c_ulong), ("shmmin", ctypes.c_ulong), ("shmmni", ctypes.c_ulong),
                ("shmseg", ctypes.c_ulong), ("shmall", ctypes.c_ulong), ("unused", ctypes.c_ulong * 4)]


def shared_memory_segments_allowed() -> int:
    """How many System V shared-memory segments this process's IPC namespace allows (shmmni), asked of the kernel
    itself (IPC_INFO), so that no view of /proc decides it."""
    info = _ShmInfo()
    _check(_libc.shmctl(0, _IPC_INFO, ctypes.byref(info)), "shmctl(IPC_INFO)")
    return int(info.shmmni)


# ---------------------------------------------------------------- capabilities (capset(2))
_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_all_capabilities() -> None:
    """Empty every capability set of this process for good: the bounding set (so an exec cannot
    bring one back), the ambient set, then effective, permitted and inheritable."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            last = int(handle.read())
    except OSError:
        last = 40
    for capability in range(last + 1):
        try:
            prctl(PR_CAPBSET_DROP, capability)
        except OSError:
            break   # not held, or an older kernel that knows fewer
    with contextlib.suppress(OSError):   # kernels before 4.3 have no ambient set
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")


# ---------------------------------------------------------------- Landlock (linux/landlock.h)
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13        # ABI 2
FS_TRUNCATE = 1 << 14     # ABI 3
FS_IOCTL_DEV = 1 << 15    # ABI 5
NET_BIND_TCP = 1 << 0     # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0   # ABI 6
SCOPE_SIGNAL = 1 << 1                 # ABI 6

FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV   # what a rule on a file may grant
READ_RIGHTS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR


def landlock_fs_rights(abi: int) -> int:
    """Every filesystem right the running kernel's Landlock ABI knows (all of them are handled, i.e. denied
    unless a rule grants them)."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1   # the kernel's struct is __attribute__((packed))
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _syscall(number: int, *args) -> int:
    _libc.syscall.restype = ctypes.c_long
    return _libc.syscall(ctypes.c_long(number), *args)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; raises OSError (ENOSYS: too old, EOPNOTSUPP: disabled at boot)."""
    return _check(_syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION)),
                  "landlock_create_ruleset")


def landlock_ruleset(abi: int, rules: list[tuple[str, int]], *, deny_tcp: bool, scope: bool) -> int:
    """A ruleset fd allowing only `rules` (path, rights) on the filesystem; with deny_tcp no TCP bind/connect
    (ABI 4+); with scope no signals or abstract sockets leaving the domain (ABI 6+). Paths that do not exist
    are skipped. Built before the sandbox drops its user id (the paths may lie under folders closed to it);
    landlock_enforce applies it."""
    handled_fs = landlock_fs_rights(abi)
    attr = _RulesetAttr(handled_fs, NET_BIND_TCP | NET_CONNECT_TCP if deny_tcp and abi >= 4 else 0,
                        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if scope and abi >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)   # older kernels know a prefix
    ruleset = _check(_syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)),
                     "landlock_create_ruleset")
    try:
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            try:
                if not stat.S_ISDIR(os.fstat(fd).st_mode):
                    rights &= FILE_RIGHTS
                rule = _PathBeneath(rights & handled_fs, fd)
                _check(_syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                                ctypes.byref(rule), ctypes.c_uint32(0)), f"landlock_add_rule {path}")
            finally:
                os.close(fd)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def landlock_enforce(ruleset: int) -> None:
    """Restrict this thread and everything it forks from now on to the ruleset, for good (sets no_new_privs)."""
    try:
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        _check(_syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)), "landlock_restrict_self")
    finally:
        os.close(ruleset)
