"""The engine's limits, and the rlimits that enforce some of them in the sandbox and in the trusted process.

The three a course may change (the per-call timeout, the budget, the memory) default to the spec's settings
(assignment/assignment.toml); the batch command's flags override them for one run.

Student code is timed by its own CPU time (the sandbox's processes, measured from outside
by processes.tree_cpu_seconds), so a loaded machine never turns into the student's timeout;
a generous cap on its load-free time (wall-clock time less its waits for a CPU: load_free.py)
stops code that sleeps or waits instead of computing. The budget bounds both, per submission. Behind them, a
plain wall-clock net that nothing in a box can stretch (wall_net_factor times the load-free net): past it a
submission's grading ends as the engine's failure, which the next run grades again.
"""
from __future__ import annotations

import os
import resource
import signal
from dataclasses import dataclass

from assignment.spec import SPEC


@dataclass(frozen=True)
class Limits:
    call_timeout: float = SPEC.settings.call_timeout    # CPU seconds per call into student code (and per import)
    wall_factor: float = 6.0            # a call may take this many times call_timeout of load-free time
    budget: float = SPEC.settings.budget    # seconds of student code per submission: CPU, and load-free apart
    # Each sandbox process's address space (RLIMIT_AS) and, where the memory layer holds, all of a box's
    # processes together (its memory cgroup, memcg.py): forked children share one limit.
    memory_bytes: int = int(SPEC.settings.memory_gb * 2**30)
    scratch_bytes: int = 256 << 20      # the box's private tmpfs: its scratch folder, /tmp, /var/tmp, /dev/shm
    ipc_bytes: int = 64 << 20           # System V shared memory in the box's own IPC namespace
    max_processes: int = 32             # processes and threads of the sandbox's user (RLIMIT_NPROC)
    max_file_bytes: int = 16 << 20      # no file written larger than this (RLIMIT_FSIZE)
    max_open_files: int = 256
    output_bytes: int = 64 << 10        # stdout/stderr kept per submission
    timeout_strikes: int = 2            # timeouts of one function before it is no longer called
    refusal_strikes: int = 3            # refused (malformed or forged) answers of one function, likewise
    trusted_memory_bytes: int = 8 << 30  # the trusted grading process's own address space
    grace: float = 60.0                 # load-free seconds of pytest's own work allowed beyond the budget
    wall_net_factor: float = 3.0        # wall-clock seconds a submission may take, in load-free nets (see wall_net)

    @property
    def call_wall_timeout(self) -> float:
        return self.call_timeout * self.wall_factor

    @property
    def submission_net(self) -> float:
        """Load-free seconds (load_free.py) after which a submission's grading is stopped as an engine failure:
        its student code stops at the budget, so only the engine's own work can reach this."""
        return self.budget + self.grace

    def wall_net(self, load_free_net: float) -> float:
        """Wall-clock seconds after which a grading whose load-free net is load_free_net is stopped, whatever the
        load-free clock says: that clock believes a box's waits for a CPU are the machine's load, which a box can
        fake in ways no reading from outside tells apart (docs/design.md). Generous: at a load of 40 on 2 cores the
        reference takes a fifth of the default."""
        return self.wall_net_factor * load_free_net


def _memory_limit() -> int:
    # CUDA reserves terabytes of address space: there RLIMIT_AS would break every GPU call,
    # so the data segment (what the process really allocates) is limited instead.
    return resource.RLIMIT_DATA if os.path.exists("/dev/nvidia0") else resource.RLIMIT_AS


def _set(pairs) -> None:
    for which, value in pairs:
        _soft, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))


def apply_sandbox_limits(limits: Limits) -> None:
    """rlimits of a sandbox (inherited by everything it forks), just before student code runs."""
    _set([(resource.RLIMIT_NPROC, limits.max_processes), (resource.RLIMIT_FSIZE, limits.max_file_bytes),
          (resource.RLIMIT_NOFILE, limits.max_open_files), (resource.RLIMIT_CORE, 0),
          (resource.RLIMIT_CPU, int(limits.budget) + 5), (_memory_limit(), limits.memory_bytes),
          # No POSIX message queue at all: without an IPC namespace of its own one would outlive the box, and
          # nothing lists them where /dev/mqueue is not mounted (System V objects are swept by their owner)
          (resource.RLIMIT_MSGQUEUE, 0)])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # an over-long write fails instead of killing


def apply_trusted_limits(limits: Limits, cpu_seconds: float) -> None:
    """rlimits of the trusted grading process: a forged answer that got past every check still cannot
    make it allocate without bound, fill the disk or spin forever."""
    _set([(_memory_limit(), limits.trusted_memory_bytes), (resource.RLIMIT_CORE, 0),
          (resource.RLIMIT_FSIZE, 256 << 20), (resource.RLIMIT_CPU, int(cpu_seconds) + 1)])
