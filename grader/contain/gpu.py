"""The GPU a box may use, and exactly the NVIDIA driver files it needs: the allowlist of a box given a GPU.

As the driver names them (under the machine's root; tests build a stand-in tree):

    /dev/nvidiactl          the control device every CUDA process opens
    /dev/nvidia-uvm         unified memory (cuInit opens it)
    /dev/nvidia-uvm-tools   its tools interface
    /dev/nvidiaN            GPU N's own device: a box opens its own GPU's, never another's
    /proc/driver/nvidia/    the driver's version, parameters and GPU list, read only
    /sys/devices/, /sys/bus/pci/devices/, /sys/module/nvidia/
                            where the GPU sits on the machine (its PCI place, NUMA node), read only: what the
                            driver's libraries read of it

and nothing beside them: no other GPU's device, no /dev/nvidia-modeset, no /dev/nvidia-caps/ (MIG capabilities),
no /dev/dri. The driver's user-space libraries (libcuda.so and the rest) lie in the system library folders every
box may read already (isolation.SYSTEM_LIBRARIES).

    gpus(root)            the GPUs the driver shows: N for each /dev/nvidiaN
    require(root)         those, or GpuError saying what is missing (no driver, no GPU)
    allowlist(n, root)    Landlock rules (path, rights) opening GPU n's files to a box
"""
from __future__ import annotations

import os
import re

from grader.contain import kernel

SHARED_DEVICES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools")
GPU_DEVICE = re.compile(r"nvidia(\d+)")
DRIVER_PROC = ("proc", "driver", "nvidia")
TOPOLOGY = (("sys", "devices"), ("sys", "bus", "pci", "devices"), ("sys", "module", "nvidia"))
# A device is opened for reading and writing and driven by ioctl (Landlock ABI 5 and later handle ioctls on devices).
DEVICE_RIGHTS = kernel.FS_READ_FILE | kernel.FS_WRITE_FILE | kernel.FS_IOCTL_DEV
READ_ONLY = kernel.FS_READ_FILE | kernel.FS_READ_DIR


class GpuError(RuntimeError):
    """This machine cannot give a box a GPU; the message says what is missing."""


def _dev(root: str, name: str) -> str:
    return os.path.join(root, "dev", name)


def gpus(root: str = "/") -> list[int]:
    """The GPUs the driver shows here, by number (one /dev/nvidiaN each), in order."""
    try:
        names = os.listdir(os.path.join(root, "dev"))
    except OSError:
        return []
    return sorted(int(match.group(1)) for name in names if (match := GPU_DEVICE.fullmatch(name)))


def require(root: str = "/") -> list[int]:
    """The GPUs a box may be given here; GpuError where the driver or a GPU is missing."""
    if not os.path.exists(_dev(root, "nvidiactl")):
        raise GpuError(f"no NVIDIA driver here: {_dev(root, 'nvidiactl')} is missing (grading on a GPU needs the "
                       f"driver's device files; without --gpu the GPU tests are reported as not run)")
    found = gpus(root)
    if not found:
        raise GpuError(f"the NVIDIA driver shows no GPU here: no {_dev(root, 'nvidia0')} (is the GPU given to this "
                       f"machine or container?)")
    return found


def allowlist(gpu: int, root: str = "/") -> list[tuple[str, int]]:
    """Landlock rules that open GPU `gpu`'s driver files to a box, and no other file of the driver."""
    if gpu < 0:
        raise ValueError(f"no GPU {gpu}")
    rules = [(_dev(root, name), DEVICE_RIGHTS) for name in (*SHARED_DEVICES, f"nvidia{gpu}")]
    return [*rules, *((os.path.join(root, *folder), READ_ONLY) for folder in (DRIVER_PROC, *TOPOLOGY))]
