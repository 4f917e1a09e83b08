"""Abuse (issue 11, class 3): leave resources behind that outlive the sandbox and count against no limit.

At import: a System V shared-memory segment (attached and filled), a System V message queue, a POSIX
message queue, and files in /tmp, /var/tmp, /dev/shm and /run/lock. In its own IPC and mount
namespaces all of it is the box's, bounded, and gone with it; then the grading goes on as usual.
"""
import ctypes
import ctypes.util
import os

KEY = int("@KEY@")
LITTER = "@LITTER@"
SHM_BYTES = 256 << 20


def _sysv():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    segment = libc.shmget(KEY, SHM_BYTES, 0o1000 | 0o600)          # IPC_CREAT
    if segment < 0:
        segment = libc.shmget(KEY, 16 << 20, 0o1000 | 0o600)       # what the box's limits allow
    if segment >= 0:
        address = libc.shmat(segment, None, 0)
        if address not in (None, ctypes.c_void_p(-1).value):
            ctypes.memset(address, 1, 16 << 20)
            libc.shmdt(ctypes.c_void_p(address))
    queue = libc.msgget(KEY, 0o1000 | 0o600)
    print(f"shm segment {segment}, message queue {queue}")


def _posix_queue():
    name = ctypes.util.find_library("rt") or "librt.so.1"
    try:
        rt = ctypes.CDLL(name, use_errno=True)
        fd = rt.mq_open(f"/{LITTER}-mq".encode(), os.O_CREAT | os.O_RDWR, 0o600, None)
        print(f"posix queue {fd}")
    except OSError as error:
        print(f"no posix queue: {error}")


def _files():
    for folder in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock"):
        try:
            with open(f"{folder}/{LITTER}", "wb") as handle:
                handle.write(bytes(4 << 20))
            print(f"left a file in {folder}")
        except OSError as error:
            print(f"no file in {folder}: {type(error).__name__}")


def run():
    for step in (_sysv, _posix_queue, _files):
        try:
            step()
        except Exception as error:  # noqa: BLE001 - each attempt on its own
            print(f"{step.__name__}: {error}")
