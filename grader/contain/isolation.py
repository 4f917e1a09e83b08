"""Operating-system isolation of a sandbox: kernel layers applied right after the fork, probed once per run.

Like a zygote-style sandbox (Chromium's zygote, isolate, nsjail, bubblewrap), every sandbox is a
fork of a warm template that locks itself down before it imports student code. The layers, and what each
one stops, are TABLE below (pid, ipc, net, mnt: namespaces; landlock: a filesystem allowlist, kernel 5.13+, no
root needed; uid: a user id per box, as root; memory: a cgroup per box, memcg.py; seccomp: a system-call
filter, seccomp.py, installed last, which also stands in for what a missing layer would have stopped).

Without root, the namespaces come through a user namespace where the kernel allows one (the box
keeps the grader's user id outside it: the uid layer is missing, the others keep it in). Each
layer is probed once per run by a child that really applies it (probe); the run reports exactly
which held (Plan.line), and every sandbox then applies exactly those, or refuses to start.
AUTOGRADER_SANDBOX_LAYERS_OFF=pid,landlock,... switches layers off (to see the engine degrade).
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import platform
import select
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from grader.contain import cgroupfs, cleanup, gpu, kernel, memcg, processes, seccomp
from grader.contain.limits import Limits, apply_sandbox_limits

NAMESPACES = {"pid": kernel.CLONE_NEWPID, "ipc": kernel.CLONE_NEWIPC, "net": kernel.CLONE_NEWNET,
              "mnt": kernel.CLONE_NEWNS}
DISABLE_ENV = "AUTOGRADER_SANDBOX_LAYERS_OFF"
UID_BASE = 1_000_000
# Inside a box with its own mounts: the tmpfs, the submission (read-only) and the home folder.
BOX_TMP = "/tmp"
BOX_SUBMISSION = "/tmp/submission"
BOX_HOME = "/tmp/home"
BOUND_TO_TMP = ("/var/tmp", "/dev/shm", "/run/lock", "/var/lock")   # those that exist and anyone may write
SYSTEM_LIBRARIES = ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/local/lib", "/etc/ld.so.cache")
# Folders of its home that torch makes when first asked (os.makedirs, which accepts one that exists): made before the
# seccomp filter, which may refuse a box every write; the sandbox names them in its environment.
CACHE_FOLDERS = {"TORCHINDUCTOR_CACHE_DIR": ".cache/torchinductor"}
IPC_LIMIT = ("kernel/shmmni", 16)   # one of the limits a box sets in its own IPC namespace (read back by the probe)


class IsolationError(OSError):
    """A layer the probe found working failed in a sandbox: the sandbox must not run student code."""


@dataclass(frozen=True)
class Layer:
    """A row of the table of layers: its name (as the isolation line writes it), the probe's proof that it is
    in force in a box that has locked itself down (bait: a file outside the box's allowlist), and what it stops.
    How it is applied is its steps in ENTER (memory, the namespaces) and LOCK_STEPS."""
    name: str
    in_force: Callable[[Box, str], bool]
    stops: str      # what it stops (and, where it is missing, what stands in for it)


SCRATCH = f"`{Limits().scratch_bytes >> 20} MiB`"   # the box's tmpfs, as the table of layers says it
# The layers, in the order the isolation line names them: the one home of what each stops (autograder/derived.py
# writes it into docs/design.md's table).
TABLE = (
    Layer("pid", lambda box, bait: os.getpid() == 1,
          "processes that outlive the box (setsid, double fork: the kernel ends them with the box's init); "
          "seeing or signalling the grader or other boxes"),
    Layer("ipc", lambda box, bait: _ipc_bounded(),
          "System V and POSIX IPC that outlives the box or fills the system-wide tables (its own namespace, "
          "small limits)"),
    Layer("net", lambda box, bait: [name for _index, name in socket.if_nameindex()] == ["lo"],
          "any network (its own namespace with a loopback that is down)"),
    Layer("mnt", lambda box, bait: _size(BOX_TMP) == box.limits.scratch_bytes and _writable(BOX_HOME),
          f"files left behind or filling the disk: `/tmp`, `/var/tmp`, `/dev/shm`, `/run/lock` are one private "
          f"tmpfs of {SCRATCH}, gone with the box; the submission is a read-only bind. Without it (a container "
          f"that refuses namespaces) the worker measures, twice a second, what the box holds in its scratch "
          f"folder and, with its own user, in the shared folders, and stops it at the same {SCRATCH} (`disk.py`)"),
    Layer("landlock", lambda box, bait: not _readable(bait),
          "reading anything but Python, the system libraries and the submission (no other copy of the hidden "
          "tests, no grader output); writing outside its scratch folder; TCP; from ABI 6, signals leaving the "
          "box"),
    Layer("uid", lambda box, bait: os.getuid() == box.uid,
          "as root, a user id of its own per submission (1,000,000 + pid): no file of another user writable, no"
          " process of another user signalled, and `kill(-1)` as that uid ends exactly its processes"),
    Layer("memory", lambda box, bait: memcg.member(box.memory_group),
          "memory past `--memory-gb` held by a box's processes together (forking children that each stay under "
          "a per-process limit): each box has a memory cgroup of its own, joined before anything else, swap "
          "off; at the limit the whole box is stopped (cgroup v2: `memory.oom.group`; v1: the kernel's OOM "
          "killer is off in the group and the worker kills the box), the row is flagged `a sandbox was stopped "
          "at the memory limit` and its largest peak is in `peak_memory_mib`. The same group counts the CPU "
          "time of every process the box ever ran, those the kernel reaped unseen included (v2: `cpu.stat` of "
          "the box's group; v1: a group of the same place in the `cpuacct` hierarchy, made and joined beside "
          "it; without `cpuacct` the layer is missing): the trusted side reads it (`cgroupfs.py`)"),
    Layer("seccomp", lambda box, bait: _locks_refused(),
          "a system-call filter, installed last (`grader/contain/seccomp.py`); it needs neither root nor "
          "namespaces, so it holds where a container refuses the rest. Always: file locks and leases (a channel"
          " between boxes over a file both may read), tracing or reading other processes' memory, io_uring, new"
          " namespaces, every change of scheduling (real-time, nice, CPU affinity), the kernel's administrative"
          " calls. And what a missing layer would have stopped: without `pid` any signal but to the box itself,"
          " without `net` new sockets, without `ipc` System V and POSIX IPC objects, without `mnt`, `landlock` "
          "and `uid` every call that writes the filesystem and `bind()` (to a path it makes a socket file), "
          "without `memory` every new process but a thread (nothing would count its CPU time once the kernel "
          "reaped it). A refused call fails with EPERM. x86_64 only: elsewhere the layer is missing and the "
          "line says so"),
)
LAYERS = tuple(layer.name for layer in TABLE)


@dataclass(frozen=True)
class Plan:
    """The layers every sandbox of this run applies (what the probe found), and why the others are missing."""
    held: tuple[str, ...] = ()
    missing: tuple[tuple[str, str], ...] = ()    # (layer, why)
    userns: bool = False                         # namespaces through a user namespace (not root)
    landlock_abi: int = 0
    memory_group: str = ""      # memory layer: the run's cgroup, where the worker makes one group per box
    memory_box: str = ""        # in a sandbox's own copy of the plan (for_box): its box's group, joined by enter()

    def has(self, layer: str) -> bool:
        return layer in self.held

    def hides_the_graders_files(self) -> bool:
        """Whether a box is kept from the grader's files (the hidden tests, other submissions, the output): by its
        own user id (the run closes them to others), its own mounts or Landlock. Without any of them it reads
        whatever the grader may read, and the seccomp layer can keep it only from writing."""
        return any(self.has(layer) for layer in ("uid", "mnt", "landlock"))

    def line(self) -> str:
        """`isolated: pid ipc net mnt landlock uid`, `partially isolated: ...; no landlock (why)`, or
        `not isolated: ...`."""
        if not self.missing:
            return "isolated: " + " ".join(self.held)
        why = "; ".join(f"no {layer} ({reason})" for layer, reason in self.missing)
        return f"partially isolated: {' '.join(self.held)}; {why}" if self.held else f"not isolated: {why}"

    def to_json(self) -> str:
        return json.dumps({"held": self.held, "missing": self.missing, "userns": self.userns,
                           "landlock_abi": self.landlock_abi, "memory_group": self.memory_group,
                           "memory_box": self.memory_box})

    @classmethod
    def from_json(cls, text: str) -> Plan:
        data = json.loads(text)
        return cls(tuple(data["held"]), tuple(tuple(m) for m in data["missing"]), bool(data["userns"]),
                   int(data["landlock_abi"]), str(data.get("memory_group", "")), str(data.get("memory_box", "")))

    def for_box(self, box: Box) -> Plan:
        """The plan as one sandbox applies it: with its own memory group, which enter() joins first. (sandbox.run
        hands enter() the plan alone, so the box's group travels in it.)"""
        return replace(self, memory_box=box.memory_group)

    def without(self, failures: list[tuple[str, str]]) -> Plan:
        failed = dict(failures)
        missing = sorted([*self.missing, *((layer, failed[layer]) for layer in LAYERS if layer in failed)],
                         key=lambda pair: LAYERS.index(pair[0]))
        return replace(self, held=tuple(layer for layer in self.held if layer not in failed), missing=tuple(missing))


@dataclass(frozen=True)
class Box:
    """One sandbox's place on the host."""
    submission: str           # the unpacked submission (root's; the box may only read it)
    scratch: str              # without private mounts: the box's one writable folder on the host
    uid: int | None           # its own user id (root only)
    limits: Limits = field(default_factory=Limits)
    memory_group: str = ""    # memory layer: its own cgroup (the worker's; "" if it could not be made)
    gpu: int | None = None    # the GPU whose driver files it may open (gpu.allowlist); None: no GPU file at all

    def view(self, plan: Plan) -> tuple[str, str]:
        """(the submission's path, the home folder) as the box sees them."""
        return (BOX_SUBMISSION, BOX_HOME) if plan.has("mnt") else (self.submission, self.scratch)


def sandbox_uid(grader_pid: int) -> int:
    return UID_BASE + grader_pid


def switched_off() -> set[str]:
    return {name.strip() for name in os.environ.get(DISABLE_ENV, "").split(",") if name.strip()}


def _why(error: OSError) -> str:
    if error.errno in (errno.ENOSYS, errno.EOPNOTSUPP):
        return f"not supported by kernel {platform.release()}"
    if error.errno in (errno.EPERM, errno.EACCES):
        return f"refused by the kernel: {os.strerror(error.errno)}; a container's seccomp profile or a sysctl?"
    return str(error)


# ---------------------------------------------------------------- the probe

def candidate_plan() -> Plan:
    """Every layer this process could try, before the kernel is asked."""
    off = switched_off()
    missing = [(layer, f"switched off by {DISABLE_ENV}") for layer in LAYERS if layer in off]
    if not kernel.privileged() and "uid" not in off:
        missing.append(("uid", "not root: the sandbox keeps the grader's user id"))
    if "seccomp" not in off and seccomp.supported():
        missing.append(("seccomp", seccomp.supported()))
    abi = 0
    if "landlock" not in off:
        try:
            abi = kernel.landlock_abi()
        except OSError as error:
            missing.append(("landlock", _why(error)))
    gone = {layer for layer, _ in missing}
    return Plan(tuple(layer for layer in LAYERS if layer not in gone),
                tuple(sorted(missing, key=lambda m: LAYERS.index(m[0]))), not kernel.privileged(), abi)


def probe(scratch_parent: str) -> Plan:
    """Apply every candidate layer in a throwaway child, exactly as a sandbox would, check that each really
    holds, and return the plan of those that did."""
    plan = candidate_plan()
    if not plan.held:
        return plan
    box_group = ""
    if plan.has("memory"):   # the run's group (kept for the run) and a throwaway box group in it for the probe
        try:
            plan = replace(plan, memory_group=memcg.create_run())
            box_group = memcg.create_box(plan.memory_group, cgroupfs.BOX_PREFIX + "probe", Limits().memory_bytes,
                                         watched=False)
        except OSError as error:
            plan = plan.without([("memory", error.strerror or str(error))])
    bait = os.path.join(scratch_parent, "probe-bait")          # readable by all: only Landlock can hide it
    with open(bait, "w") as handle:
        handle.write("a file outside the box's allowlist\n")
    os.chmod(bait, 0o644)
    submission = os.path.join(scratch_parent, "probe-submission")
    scratch = os.path.join(scratch_parent, "probe-scratch")
    os.makedirs(submission, exist_ok=True)
    uid = sandbox_uid(os.getpid()) if plan.has("uid") else None
    box = Box(submission, scratch, uid, memory_group=box_group)
    answer = processes.answer_of_child(lambda: _probe_child(plan.for_box(box), box, bait))
    cleanup.clean_folder(scratch, uid)
    os.unlink(bait)
    os.rmdir(submission)
    if box_group:
        with contextlib.suppress(OSError):
            memcg.remove(box_group)
    if answer is None:   # it died: every layer is reported as failed
        failures = [(layer, "the probe died while applying it") for layer in plan.held]
    else:
        failures = [tuple(f) for f in answer]
    plan = plan.without(failures)
    if plan.memory_group and not plan.has("memory"):
        memcg.remove_run(plan.memory_group)
        plan = replace(plan, memory_group="")
    return plan


def _probe_child(plan: Plan, box: Box, bait: str) -> list[tuple[str, str]]:
    """Lock down as a sandbox does, then prove each layer that did not fail on the way."""
    failures = enter(plan, strict=False)
    plan = plan.without(failures)
    failures += lock(plan, box, strict=False)
    failed = {layer for layer, _ in failures}
    for layer in TABLE:
        if plan.has(layer.name) and layer.name not in failed and not layer.in_force(box, bait):
            failures.append((layer.name, "applied but not in force"))
    return failures


def _size(folder: str) -> int:
    info = os.statvfs(folder)
    return info.f_blocks * info.f_frsize


def _readable(path: str) -> bool:
    try:
        with open(path, "rb"):
            return True
    except OSError:
        return False


def _ipc_bounded() -> bool:
    """The box's IPC namespace is its own: the kernel reports the small limits the box set there (_bound_ipc),
    not the host's."""
    try:
        return kernel.shared_memory_segments_allowed() == IPC_LIMIT[1]
    except OSError:
        return False


def _locks_refused() -> bool:
    """The filter is in force: a lock on a pipe of our own, which nothing else refuses, is refused."""
    read_end, write_end = os.pipe()
    try:
        fcntl.flock(read_end, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError as error:
        return error.errno == errno.EPERM
    finally:
        os.close(read_end)
        os.close(write_end)


def _writable(folder: str) -> bool:
    try:
        with open(os.path.join(folder, ".probe"), "w"):
            return True
    except OSError:
        return False


# ---------------------------------------------------------------- applying the layers

def enter(plan: Plan, *, strict: bool = True) -> list[tuple[str, str]]:
    """Join the box's memory cgroup, then enter the plan's namespaces; with a PID namespace, fork its init and
    return in it (the parent stays behind as the box's keeper and never returns). Returns the layers that
    failed (strict: raises)."""
    failures: list[tuple[str, str]] = []
    if plan.has("memory"):   # first, while still the grader's user: all the box ever starts is inside the group
        try:
            memcg.join(plan.memory_box)
        except OSError as error:
            if strict:
                raise IsolationError(error.errno, f"memory: {error.strerror or error}") from None
            failures.append(("memory", error.strerror or str(error)))
    wanted = [layer for layer in NAMESPACES if plan.has(layer)]
    if not wanted:
        return failures
    if plan.userns:
        outer_uid, outer_gid = os.getuid(), os.getgid()
        try:
            kernel.unshare(kernel.CLONE_NEWUSER)
            _map_own_ids(outer_uid, outer_gid)
        except OSError as error:
            if strict:
                raise IsolationError(error.errno, f"user namespace: {error}") from None
            return failures + [(layer, "user namespaces " + _why(error)) for layer in wanted]
    for layer in wanted:
        try:
            kernel.unshare(NAMESPACES[layer])
        except OSError as error:
            if strict:
                raise IsolationError(error.errno, f"{layer} namespace: {error}") from None
            failures.append((layer, _why(error)))
    if plan.has("pid") and "pid" not in dict(failures):
        _become_init()
    return failures


def _map_own_ids(uid: int, gid: int) -> None:
    """In a fresh user namespace: be its root, mapped to our own ids outside (the only mapping an ordinary
    user may write). Root of the namespace may set the IPC namespace's limits; lock() then drops every
    capability, so what is left is an ordinary process with the grader's ids outside."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1\n"), ("gid_map", f"0 {gid} 1\n")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)


def _become_init() -> None:
    """Fork the first process of the new PID namespace and return in it. The parent keeps nothing of the
    box open, waits for it and exits with its status; killing the parent kills the init (parent-death
    signal), and the end of the init ends every process of the box."""
    alive_read, alive_write = os.pipe()   # the init cannot see its parent's pid: EOF here means it is gone
    child = os.fork()
    if child == 0:
        os.close(alive_write)
        kernel.prctl(kernel.PR_SET_PDEATHSIG, 9)
        ready, _, _ = select.select([alive_read], [], [], 0)
        if ready:   # EOF: the keeper ended before the request took effect
            os._exit(1)
        os.close(alive_read)
        return
    os.closerange(0, alive_write)
    os.closerange(alive_write + 1, 65536)
    code = 1
    try:
        _pid, status = os.waitpid(child, 0)
        code = os.waitstatus_to_exitcode(status) & 0xFF
    finally:
        os._exit(code)


@dataclass
class Lockdown:
    """A box locking itself down (lock): what its steps share."""
    plan: Plan                  # the layers it was asked to apply
    box: Box
    failures: list[tuple[str, str]] = field(default_factory=list)   # (layer, why) of the steps that failed
    own_proc: bool = False      # it mounted a /proc of its own (private mounts, with its own PID namespace)
    ruleset: int = -1           # the Landlock ruleset built, until it is enforced

    def now(self) -> Plan:
        """The plan less the layers that failed so far."""
        return self.plan.without(self.failures)


@dataclass(frozen=True)
class Step:
    """One step of the lock-down. A step of a layer runs while the plan still holds that layer, and its failure is
    that layer's (raised where strict); a step of no layer runs in every box where `wanted` says so, and its
    failure stops the box."""
    layer: str | None
    does: str
    apply: Callable[[Lockdown], object]
    wanted: Callable[[Lockdown], bool] = lambda lockdown: True


def _host_scratch(lockdown: Lockdown) -> None:
    box = lockdown.box
    os.mkdir(box.scratch, 0o700)
    if box.uid is not None:
        os.chown(box.scratch, box.uid, box.uid)


def _mounts(lockdown: Lockdown) -> None:
    _private_mounts(lockdown.box, with_proc=lockdown.plan.has("pid"))
    lockdown.own_proc = lockdown.plan.has("pid")


def _build_landlock(lockdown: Lockdown) -> None:
    rules = _landlock_rules(lockdown.now(), lockdown.box, lockdown.own_proc)
    lockdown.ruleset = kernel.landlock_ruleset(lockdown.plan.landlock_abi, rules, deny_tcp=True, scope=True)


def _no_capabilities(lockdown: Lockdown) -> None:
    kernel.drop_all_capabilities()    # root of the user namespace no more: no mount, no unshare, nothing
    kernel.prctl(kernel.PR_SET_NO_NEW_PRIVS, 1)   # and no exec gives any capability back


def _cache_folders(lockdown: Lockdown) -> None:
    _, home = lockdown.box.view(lockdown.now())
    for folder in CACHE_FOLDERS.values():
        os.makedirs(os.path.join(home, folder), exist_ok=True)


# The lock-down after enter(), in order: the last step before student code runs.
LOCK_STEPS = (
    Step(None, "a scratch folder of its own on the host, empty", _host_scratch,
         wanted=lambda lockdown: not lockdown.plan.has("mnt")),
    Step("mnt", "private mounts: a bounded /tmp, the submission read-only, a /proc of its own", _mounts),
    Step("ipc", "small IPC limits in its own IPC namespace", lambda lockdown: _bound_ipc(lockdown.box.limits)),
    Step(None, "rlimits", lambda lockdown: apply_sandbox_limits(lockdown.box.limits)),
    Step("landlock", "the filesystem allowlist, built while the files are still in reach", _build_landlock),
    Step("uid", "a user id of its own, for good", lambda lockdown: become(lockdown.box.uid)),
    Step(None, "dies with its parent (a change of user id clears that)",
         lambda lockdown: kernel.prctl(kernel.PR_SET_PDEATHSIG, 9), wanted=lambda lockdown: lockdown.plan.has("uid")),
    Step(None, "no capability left in its user namespace, and none to regain", _no_capabilities,
         wanted=lambda lockdown: not lockdown.plan.has("uid") and lockdown.plan.userns
         and any(lockdown.plan.has(layer) for layer in NAMESPACES)),
    Step("landlock", "the filesystem allowlist, in force", lambda lockdown: kernel.landlock_enforce(lockdown.ruleset)),
    Step(None, "torch's cache folders in its home, before a filter that may refuse every write", _cache_folders),
    Step("seccomp", "the system-call filter, last: it refuses what the layers that held leave open",
         lambda lockdown: seccomp.install(seccomp.rules_for(lockdown.now().held, os.getpid()))),
)


def lock(plan: Plan, box: Box, *, strict: bool = True) -> list[tuple[str, str]]:
    """After enter(): LOCK_STEPS, in order. Returns the layers that failed (strict: raises IsolationError)."""
    lockdown = Lockdown(plan, box)
    for step in LOCK_STEPS:
        if not step.wanted(lockdown) or (step.layer is not None and not lockdown.now().has(step.layer)):
            continue
        if step.layer is None:
            step.apply(lockdown)
            continue
        try:
            step.apply(lockdown)
        except OSError as error:
            if strict:
                raise IsolationError(error.errno, f"{step.layer}: {error}") from None
            lockdown.failures.append((step.layer, _why(error)))
    return lockdown.failures


def _private_mounts(box: Box, *, with_proc: bool) -> None:
    """/tmp a bounded tmpfs owned by the box (with /var/tmp and /dev/shm bound to it), the submission bound
    read-only at /tmp/submission, and (with its own PID namespace) a /proc that shows only the box."""
    submission = os.open(box.submission, os.O_PATH | os.O_DIRECTORY)   # /tmp is about to be covered
    covered = [BOX_TMP, *BOUND_TO_TMP]
    buried = {root: os.open(root, os.O_PATH | os.O_DIRECTORY) for root in installation_roots()
              if any(root.startswith(os.path.realpath(folder) + os.sep) for folder in covered)}
    try:
        kernel.mount(None, "/", None, kernel.MS_REC | kernel.MS_PRIVATE)   # nothing propagates to the host
        owner = f",uid={box.uid},gid={box.uid}" if box.uid is not None else ""
        kernel.mount("tmpfs", BOX_TMP, "tmpfs", kernel.MS_NOSUID | kernel.MS_NODEV,
                     f"size={box.limits.scratch_bytes},nr_inodes=10000,mode=0700{owner}")
        for folder in (BOX_SUBMISSION, BOX_HOME):
            os.mkdir(folder, 0o700)
            if box.uid is not None:
                os.chown(folder, box.uid, box.uid)
        _bind_read_only(submission, BOX_SUBMISSION)
        for root, fd in buried.items():     # a Python installation under /tmp stays where it was, read-only
            folder = next(os.path.realpath(f) for f in covered if root.startswith(os.path.realpath(f) + os.sep))
            inside = BOX_TMP + root[len(folder):]
            os.makedirs(inside, exist_ok=True)
            _bind_read_only(fd, inside)
        bound = set()
        for target in map(os.path.realpath, BOUND_TO_TMP):
            if target not in bound and os.path.isdir(target) and os.stat(target).st_mode & 0o002:
                kernel.mount(BOX_TMP, target, None, kernel.MS_BIND)
                bound.add(target)
    finally:
        for fd in (submission, *buried.values()):
            os.close(fd)
    hidden = kernel.MS_NOSUID | kernel.MS_NODEV | kernel.MS_NOEXEC
    if with_proc:
        with contextlib.suppress(OSError):   # a container may lock /proc; Landlock then allows only /proc/self
            kernel.mount("proc", "/proc", "proc", hidden)
    with contextlib.suppress(OSError):       # only where /dev/mqueue exists; the queues die with the namespace anyway
        kernel.mount("mqueue", "/dev/mqueue", "mqueue", hidden)


def _bind_read_only(fd: int, target: str) -> None:
    """Bind the folder open as fd (an O_PATH descriptor) at target, read-only."""
    kernel.mount(f"/proc/self/fd/{fd}", target, None, kernel.MS_BIND | kernel.MS_REC)
    kernel.mount(None, target, None, kernel.MS_BIND | kernel.MS_REMOUNT | kernel.MS_RDONLY | kernel.MS_NOSUID
                 | kernel.MS_NODEV)


def _bound_ipc(limits: Limits) -> None:
    """Small System V and POSIX IPC limits in the box's own IPC namespace (its sysctls are per namespace)."""
    page = os.sysconf("SC_PAGE_SIZE")
    values = {"kernel/shmmax": limits.ipc_bytes, "kernel/shmall": limits.ipc_bytes // page, IPC_LIMIT[0]: IPC_LIMIT[1],
              "kernel/msgmni": 16, "kernel/msgmnb": 1 << 16, "kernel/msgmax": 8192, "kernel/sem": "32 256 32 16",
              "fs/mqueue/queues_max": 16, "fs/mqueue/msg_max": 16, "fs/mqueue/msgsize_max": 8192}
    for name, value in values.items():
        path = f"/proc/sys/{name}"
        if os.path.exists(path):
            with open(path, "w") as handle:
                handle.write(f"{value}\n")


def linked_through_box_tmp() -> list[str]:
    """This Python's prefix and import paths that lie under a folder the box covers with its private tmpfs (/tmp,
    /var/tmp, /dev/shm) and go through a link (a virtual environment linked from /tmp, to anywhere): inside a box
    such a path leads nowhere, so torch's modules loaded on demand cannot be found there. An installation that
    really lies under /tmp is bound back into the box at its real place: that one grades. (The executable is not
    asked: a venv's bin/python is a link to its base interpreter, and nothing in a box runs it.)"""
    def covered(path: str) -> bool:
        return any(path == folder or path.startswith(folder + os.sep) for folder in (BOX_TMP, *BOUND_TO_TMP))
    return [path for path in (sys.prefix, *sys.path) if path and covered(path) and os.path.realpath(path) != path]


def installation_roots() -> list[str]:
    """The Python installation: its prefixes (stdlib, site-packages, torch's libraries), real paths."""
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return sorted(roots)


def _landlock_rules(plan: Plan, box: Box, own_proc: bool) -> list[tuple[str, int]]:
    """What a box may read and write (own_proc: it has a /proc of its own, showing only the box)."""
    read, everything = kernel.READ_RIGHTS, kernel.landlock_fs_rights(plan.landlock_abi)
    submission, home = box.view(plan)
    rules = [(path, read) for path in (*installation_roots(), *SYSTEM_LIBRARIES, submission)]
    rules += [("/dev/null", kernel.FS_READ_FILE | kernel.FS_WRITE_FILE),
              ("/dev/zero", kernel.FS_READ_FILE), ("/dev/urandom", kernel.FS_READ_FILE)]
    rules.append(("/proc" if own_proc else "/proc/self", kernel.FS_READ_FILE | kernel.FS_READ_DIR))
    rules.append((BOX_TMP if plan.has("mnt") else home, everything))
    if box.gpu is not None:
        rules += gpu.allowlist(box.gpu)
    return rules


def become(uid: int | None) -> None:
    """Become uid/gid `uid` for good (real, effective and saved ids), with no extra groups: every capability
    goes with root."""
    if uid is None:
        raise OSError("the box has no user id of its own")
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise OSError("could not drop privileges")
    kernel.prctl(kernel.PR_SET_DUMPABLE, 1)   # after a uid change /proc/self is root's; the import handles need it
