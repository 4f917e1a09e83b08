"""A seccomp filter for a box: the system calls no attention code needs, refused by the kernel.

The other layers each need something of the kernel or of the grader's privileges (namespaces,
Landlock, root for a user id of its own); a seccomp filter needs neither: any process may install
one once it has promised never to gain privileges (no_new_privs), and container runtimes allow it
(Docker's default profile does). So it is the layer that holds where the others are refused, and
it refuses, by system call and argument, what those others would have stopped:

- always: file locks and leases (a channel between boxes over a file both can read), tracing
  other processes or reading their memory, io_uring (whose operations no filter sees), new
  namespaces, every change of scheduling (real-time, nice, CPU affinity: a box that lowers its own
  priority or pins itself to one CPU makes waits for a CPU that the load-free clock would take for
  the machine's load), and the kernel's administrative calls (modules, keys, BPF, mounts, clocks,
  I/O ports);
- without the memory layer (whose cgroup counts the CPU time of every process the box ever ran):
  every new process but a thread (fork, vfork, clone without CLONE_THREAD). A child whose parent
  ignores SIGCHLD is reaped by the kernel, and its CPU time then reaches no /proc file the grader
  reads; threads count in their process's own time;
- without the pid layer: any signal but to the box itself (its own pid, or its own process group:
  the sandbox is the leader of a session of its own);
- without the net layer: new sockets (a pair of connected ones, socketpair, stays allowed);
- without the ipc layer: System V objects and POSIX message queues (they would outlive the box);
- without any of mnt, landlock and uid (nothing else keeps the box off the grader's files): every
  call that creates, writes, renames, removes or changes the permissions of a file, and bind() (to a
  path it creates a socket file; the filter cannot see the address behind its pointer).

A refused call fails with EPERM (and one the filter cannot inspect, such as openat2 and clone3,
with ENOSYS, which makes the C library use its older form, which the filter does inspect). A
call of another architecture's numbering (x32 on x86_64) is refused. The syscall numbers are
x86_64's; on another machine the layer is missing, and the isolation line says so.
"""
from __future__ import annotations

import ctypes
import errno
import platform
import struct
from dataclasses import dataclass

from grader.contain import kernel

ARCHITECTURES = {"x86_64": 0xC000003E}   # AUDIT_ARCH_X86_64
X32_SYSCALL_BIT = 0x40000000

# x86_64 syscall numbers (arch/x86/entry/syscalls/syscall_64.tbl).
NUMBERS = {
    "open": 2, "creat": 85, "openat": 257, "openat2": 437, "open_by_handle_at": 304,
    "mkdir": 83, "mkdirat": 258, "rmdir": 84, "unlink": 87, "unlinkat": 263, "rename": 82, "renameat": 264,
    "renameat2": 316, "link": 86, "linkat": 265, "symlink": 88, "symlinkat": 266, "mknod": 133, "mknodat": 259,
    "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452, "chown": 92, "fchown": 93, "lchown": 94,
    "fchownat": 260, "truncate": 76, "utime": 132, "utimes": 235, "utimensat": 280, "futimesat": 261,
    "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198,
    "fremovexattr": 199,
    "flock": 73, "fcntl": 72,
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "kill": 62, "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
    "pidfd_open": 434, "pidfd_send_signal": 424,
    "socket": 41,
    "shmget": 29, "semget": 64, "msgget": 68, "mq_open": 240,
    "unshare": 272, "setns": 308, "clone": 56, "clone3": 435, "fork": 57, "vfork": 58, "bind": 49,
    "setpriority": 141, "sched_setaffinity": 203,
    "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "kexec_load": 246, "kexec_file_load": 320,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "add_key": 248, "request_key": 249,
    "keyctl": 250, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "swapon": 167,
    "swapoff": 168, "reboot": 169, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "mount_setattr": 442, "iopl": 172, "ioperm": 173, "sched_setscheduler": 144,
    "sched_setattr": 314, "settimeofday": 164, "clock_settime": 227, "adjtimex": 159, "clock_adjtime": 305,
    "sethostname": 170, "setdomainname": 171, "syslog": 103, "acct": 163, "quotactl": 179, "vhangup": 153,
}
ALWAYS = ("flock", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "io_uring_setup",
          "io_uring_enter", "io_uring_register", "unshare", "setns", "bpf", "perf_event_open", "userfaultfd",
          "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "add_key",
          "request_key", "keyctl", "mount", "umount2", "pivot_root", "chroot", "swapon", "swapoff", "reboot",
          "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "iopl", "ioperm",
          "sched_setscheduler", "sched_setattr", "setpriority", "sched_setaffinity", "settimeofday", "clock_settime",
          "adjtimex", "clock_adjtime", "sethostname", "setdomainname", "syslog", "acct", "quotactl", "vhangup")
# fcntl commands: F_GETLK, F_SETLK, F_SETLKW (and their 64-bit twins), the open-file-description locks, leases,
# directory notifications.
LOCK_COMMANDS = (5, 6, 7, 12, 13, 14, 36, 37, 38, 1024, 1025, 1026)
NEW_NAMESPACES = kernel.CLONE_NEWNS | kernel.CLONE_NEWIPC | kernel.CLONE_NEWUSER | kernel.CLONE_NEWPID | \
    kernel.CLONE_NEWNET | 0x04000000 | 0x02000000   # CLONE_NEWUTS, CLONE_NEWCGROUP
SIGNALS_TO_ONESELF = ("kill", "rt_sigqueueinfo")              # first argument: a pid (or a group, negated)
THREAD_SIGNALS = ("tgkill", "rt_tgsigqueueinfo")              # first argument: the thread group
SIGNALS_ELSEWHERE = ("tkill", "pidfd_open", "pidfd_send_signal")
IPC = ("shmget", "semget", "msgget", "mq_open")
WRITING = ("creat", "open_by_handle_at", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat",
           "renameat2", "link", "linkat", "symlink", "symlinkat", "mknod", "mknodat", "chmod", "fchmod", "fchmodat",
           "fchmodat2", "chown", "fchown", "lchown", "fchownat", "truncate", "utime", "utimes", "utimensat",
           "futimesat", "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", "bind")
NEW_PROCESSES = ("fork", "vfork")   # and clone without CLONE_THREAD
CLONE_THREAD = 0x00010000
OPEN_FLAGS_ARGUMENT = {"open": 1, "openat": 2}
WRITE_FLAGS = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000   # O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND

# Classic BPF, as seccomp runs it over struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]}.
_LOAD, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_NR, _ARCH = 0, 4
_ALLOW, _ERRNO, _KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2


def _argument(index: int) -> int:
    return 16 + 8 * index   # its low 32 bits (little-endian): the kernel reads pids, commands and flags as ints


@dataclass(frozen=True)
class Rules:
    """What the filter refuses besides ALWAYS, from the layers the run holds."""
    own_pid: int                 # signals go only here (and to its group) when the box has no PID namespace
    signals: bool = False        # refuse signals elsewhere
    sockets: bool = False        # refuse new sockets
    ipc: bool = False            # refuse System V objects and POSIX queues
    writing: bool = False        # refuse every call that writes the filesystem
    forks: bool = False          # refuse every new process but a thread


def rules_for(held: tuple[str, ...], own_pid: int) -> Rules:
    return Rules(own_pid, signals="pid" not in held, sockets="net" not in held, ipc="ipc" not in held,
                 writing=not {"mnt", "landlock", "uid"} & set(held), forks="memory" not in held)


def supported() -> str:
    """Why this machine cannot have the layer ("" when it can)."""
    machine = platform.machine()
    return "" if machine in ARCHITECTURES else f"no syscall table for {machine} in this engine"


def program(rules: Rules) -> bytes:
    """The filter, as the kernel takes it."""
    code: list[tuple[int, int, int, int]] = [
        (_LOAD, 0, 0, _ARCH), (_JEQ, 1, 0, ARCHITECTURES[platform.machine()]), (_RET, 0, 0, _KILL_PROCESS),
        (_LOAD, 0, 0, _NR), (_JGE, 0, 1, X32_SYSCALL_BIT), (_RET, 0, 0, _ERRNO | errno.EPERM),
    ]
    refused = [*ALWAYS, *(SIGNALS_ELSEWHERE if rules.signals else ()), *(("socket",) if rules.sockets else ()),
               *(IPC if rules.ipc else ()), *(WRITING if rules.writing else ()),
               *(NEW_PROCESSES if rules.forks else ())]
    for name in refused:
        code += _refuse(name, errno.EPERM)
    for name in ("openat2", "clone3"):   # arguments behind a pointer: the C library falls back on ENOSYS
        code += _refuse(name, errno.ENOSYS)
    code += _argument_in("fcntl", 1, LOCK_COMMANDS, refuse_if_in=True)
    code += _clone(refuse_processes=rules.forks)
    if rules.signals:
        own = (rules.own_pid, 0, -rules.own_pid & 0xFFFFFFFF)   # itself, its group, its group by number
        for name in SIGNALS_TO_ONESELF:
            code += _argument_in(name, 0, own, refuse_if_in=False)
        for name in THREAD_SIGNALS:
            code += _argument_in(name, 0, (rules.own_pid,), refuse_if_in=False)
    if rules.writing:
        for name, index in OPEN_FLAGS_ARGUMENT.items():
            code += _flags_set(name, index, WRITE_FLAGS)
    code.append((_RET, 0, 0, _ALLOW))
    return b"".join(struct.pack("HBBI", op, jt, jf, k) for op, jt, jf, k in code)


def install(rules: Rules) -> None:
    """Promise no new privileges and install the filter on this process (its children inherit it). Raises
    OSError where the kernel refuses."""
    load(program(rules))


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def load(code: bytes) -> None:
    """Install a classic-BPF seccomp program (8-byte instructions) on this process, after no_new_privs."""
    kernel.prctl(kernel.PR_SET_NO_NEW_PRIVS, 1)
    buffer = ctypes.create_string_buffer(code, len(code))
    program_ = _Program(len(code) // 8, ctypes.addressof(buffer))
    kernel.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(program_))


def _refuse(name: str, number: int) -> list[tuple[int, int, int, int]]:
    return [(_JEQ, 0, 1, NUMBERS[name]), (_RET, 0, 0, _ERRNO | number)]


def _argument_in(name: str, index: int, values, *, refuse_if_in: bool) -> list[tuple[int, int, int, int]]:
    """The call `name`, refused when its argument `index` is one of values (refuse_if_in) or is none of them."""
    tests = [(_JEQ, len(values) - position, 0, value) for position, value in enumerate(values)]
    matched, unmatched = (_ERRNO | errno.EPERM, _ALLOW) if refuse_if_in else (_ALLOW, _ERRNO | errno.EPERM)
    block = [(_LOAD, 0, 0, _argument(index)), *tests, (_RET, 0, 0, unmatched), (_RET, 0, 0, matched)]
    return [(_JEQ, 0, len(block), NUMBERS[name]), *block]


def _clone(*, refuse_processes: bool) -> list[tuple[int, int, int, int]]:
    """clone, refused when its flags ask for a new namespace, and (refuse_processes) when they lack CLONE_THREAD."""
    refused = _RET, 0, 0, _ERRNO | errno.EPERM
    thread_test = [(_JSET, 1, 0, CLONE_THREAD), refused] if refuse_processes else []
    block = [(_LOAD, 0, 0, _argument(0)), (_JSET, len(thread_test) + 1, 0, NEW_NAMESPACES), *thread_test,
             (_RET, 0, 0, _ALLOW), refused]
    return [(_JEQ, 0, len(block), NUMBERS["clone"]), *block]


def _flags_set(name: str, index: int, flags: int) -> list[tuple[int, int, int, int]]:
    """The call `name`, refused when its argument `index` has any of flags set."""
    block = [(_LOAD, 0, 0, _argument(index)), (_JSET, 1, 0, flags), (_RET, 0, 0, _ALLOW),
             (_RET, 0, 0, _ERRNO | errno.EPERM)]
    return [(_JEQ, 0, len(block), NUMBERS[name]), *block]
