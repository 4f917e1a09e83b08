"""The memory layer (memcg.py): one memory cgroup per sandbox, so the limit holds for all its processes together.

Shown to hold (a box's processes are stopped together at the limit), to be probed for real and reported, to
leave no cgroup behind (a killed run's groups go with the next run), and to matter: graded at --memory-gb 2,
three forked children that each fill over half the limit cost merge_heads's part with the layer on, and with
it switched off (the seccomp layer too, which refuses children where no cgroup counts their CPU) they hold one and
a half times the limit between them and keep every point. The same group counts the CPU time of children the
kernel reaped, which no /proc file shows.
"""
from __future__ import annotations

import json
import mmap
import os
import signal
import subprocess
import sys
import time

import pytest

from autograder.adversarial import memory, read_rows, result_files, verify
from autograder.adversarial.base import Context
from autograder.samples import write_submission
from grader.contain import cgroupfs, isolation, kernel, memcg, processes
from grader.paths import REPO
from tests.grading_command import grade
from tests.patience import SAFETY_NET_S


def _unavailable() -> str:
    if not kernel.privileged():
        return "needs root"
    try:
        memcg.own_group()
    except OSError as error:
        return str(error)
    return ""


needs_memcg = pytest.mark.skipif(bool(_unavailable()), reason=_unavailable() or "-")
MIB = 1 << 20
OFF = "memory,seccomp"
GIB = 2 ** 30


def _dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def _procs(group: str) -> list[str]:
    with open(os.path.join(group, "cgroup.procs")) as handle:
        return handle.read().split()


def _leftovers() -> list[str]:
    """Run groups in our memory cgroup whose process is gone (a live one may be another engine's run)."""
    parent = memcg.own_group()
    return [name for name in os.listdir(parent) if name.startswith(memcg.RUN_PREFIX)
            and name[len(memcg.RUN_PREFIX):].isdigit() and not processes.alive(int(name[len(memcg.RUN_PREFIX):]))]


# ---------------------------------------------------------------- the group itself

@needs_memcg
def test_a_box_group_holds_its_processes_together_and_stops_them_at_the_limit():
    """Two children of 160 MiB each, within any per-process limit, in a 256 MiB group: together they reach it."""
    run = memcg.create_run()
    group = memcg.create_box(run, "box-test", 256 * MIB)
    children = []
    try:
        for _ in range(2):
            pid = os.fork()
            if pid == 0:
                try:
                    memcg.join(group)
                    hog = mmap.mmap(-1, 160 * MIB)
                    for offset in range(0, 160 * MIB, mmap.PAGESIZE):
                        hog[offset] = 1
                    time.sleep(60)
                finally:
                    os._exit(0)
            children.append(pid)
        deadline = time.monotonic() + 30
        while not memcg.over_limit(group) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert memcg.over_limit(group)
        assert 256 * MIB - mmap.PAGESIZE <= memcg.peak(group) <= 256 * MIB
        assert sorted(map(int, _procs(group))) == sorted(children)
    finally:
        memcg.kill(group)
        for pid in children:
            os.waitpid(pid, 0)
        memcg.remove(group)
        memcg.remove_run(run)
    assert not os.path.exists(run)


@needs_memcg
def test_groups_of_a_run_whose_process_is_gone_are_removed_by_the_next_run():
    stale = os.path.join(memcg.own_group(), f"{memcg.RUN_PREFIX}{_dead_pid()}")
    os.makedirs(os.path.join(stale, "box-1-1"))
    run = memcg.create_run()
    try:
        assert not os.path.exists(stale)
    finally:
        memcg.remove_run(run)


def test_cgroup_v2_is_found_from_mountinfo_and_a_missing_controller_is_named(tmp_path, monkeypatch):
    (tmp_path / "grader").mkdir()
    (tmp_path / "grader" / "cgroup.controllers").write_text("cpu io memory pids\n")
    read = memcg._read
    monkeypatch.setattr(memcg, "_read", lambda path: "0::/grader\n" if path == "/proc/self/cgroup" else read(path))
    monkeypatch.setattr(cgroupfs, "mounts", lambda: [("/", "/proc", "proc", "rw"),
                                                      ("/", str(tmp_path), "cgroup2", "rw,nsdelegate")])
    assert memcg.own_group() == str(tmp_path / "grader") and memcg.is_v2(memcg.own_group())
    (tmp_path / "grader" / "cgroup.controllers").write_text("cpu io pids\n")
    with pytest.raises(OSError, match="cgroup v2: the memory controller is not available in"):
        memcg.own_group()


# ---------------------------------------------------------------- the probe and the plan

@needs_memcg
def test_the_probe_finds_the_layer_and_the_plan_carries_the_runs_group(sandbox_root):
    plan = isolation.probe(sandbox_root)
    assert plan.has("memory") and plan.line().endswith(" uid memory seccomp")
    assert os.path.dirname(plan.memory_group) == memcg.own_group()
    assert not [entry for entry in os.scandir(plan.memory_group) if entry.is_dir()]   # the probe's box group: gone
    travelled = isolation.Plan.from_json(plan.to_json())
    assert travelled == plan
    box = isolation.Box("/s", "/t", None, memory_group=os.path.join(plan.memory_group, "box-1-1"))
    assert plan.for_box(box).memory_box == box.memory_group and plan.for_box(box).line() == plan.line()


@needs_memcg
def test_the_probe_reports_a_join_that_did_not_happen(sandbox_root, monkeypatch):
    monkeypatch.setattr(memcg, "join", lambda group: None)   # the child "joins" and stays where it was
    plan = isolation.probe(sandbox_root)
    assert ("memory", "applied but not in force") in plan.missing
    assert plan.memory_group == ""
    assert f"{memcg.RUN_PREFIX}{os.getpid()}" not in os.listdir(memcg.own_group())


@needs_memcg
def test_switched_off_there_is_no_group(sandbox_root, monkeypatch):
    monkeypatch.setenv(isolation.DISABLE_ENV, "memory")
    plan = isolation.probe(sandbox_root)
    assert "no memory (switched off by AUTOGRADER_SANDBOX_LAYERS_OFF)" in plan.line() and plan.memory_group == ""


@needs_memcg
def test_a_sandbox_without_its_group_refuses_to_start():
    """enter() joins first and, strict as in a sandbox, raises rather than run without the limit."""
    plan = isolation.Plan(("memory",), (), False, 0, "/nonexistent")
    with pytest.raises(isolation.IsolationError, match="no memory cgroup was made for this sandbox"):
        isolation.enter(plan)


@needs_memcg
def test_a_run_leaves_no_group_behind_when_its_process_ends():
    code = ("import tempfile; from grader.contain import isolation; "
            "print(isolation.probe(tempfile.mkdtemp()).memory_group)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=SAFETY_NET_S)
    group = proc.stdout.strip()
    assert group.startswith(memcg.own_group()) and not os.path.exists(group), proc.stderr[-2000:]


# ---------------------------------------------------------------- graded: the defence on, then off

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The reference and the attack, graded at 2 GiB (a call may take 20 s of CPU: the children's page faults
    are slow on a small VM) with the memory layer on, then switched off, and the seccomp layer with it: without the
    memory cgroup to count their CPU time the filter would refuse the children themselves."""
    root = tmp_path_factory.mktemp("memory") / "class"
    context = Context(root, root.with_name("markers"))
    write_submission(root / "reference")
    (entry,) = memory.entries(context)
    entry.write(root / entry.expectation.name, context)
    runs = {}
    for layers_off in ("", OFF):
        out = root.parent / f"out-{layers_off or 'on'}"
        proc = grade(root, "--out", out, "--workers", "2", "--memory-gb", "2", "--timeout", "20",
                     layers_off=layers_off)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        runs[layers_off or "on"] = (out, proc)
    return entry.expectation, runs


def _report(out) -> tuple[int, int, int] | None:
    return memory.held_report(json.loads(result_files(out)[memory.NAME].read_text())["output"])


@pytest.mark.slow
@needs_memcg
def test_with_the_layer_the_forked_children_cost_that_functions_part_only(graded):
    expectation, runs = graded
    out, proc = runs["on"]
    assert verify([expectation], out) == []          # part 3 lower than the reference's, the rest equal, flagged
    rows = read_rows(out)
    assert rows["reference"]["score"] == 100.0
    assert "a sandbox was stopped at the memory limit (2 GiB for all its processes together)" in \
        rows[memory.NAME]["flags"]
    assert rows[memory.NAME]["isolation"].endswith(" uid memory seccomp") and "isolation: isolated:" in proc.stdout
    assert _report(out) is None                       # no sandbox ever got to say its children held it all


@pytest.mark.slow
@needs_memcg
def test_with_the_layer_switched_off_the_children_hold_more_than_the_limit_and_keep_the_points(graded):
    expectation, runs = graded
    out, proc = runs[OFF]
    assert "no memory (switched off by AUTOGRADER_SANDBOX_LAYERS_OFF)" in proc.stdout
    rows = read_rows(out)
    assert rows[memory.NAME]["score"] == rows["reference"]["score"] == 100.0
    assert any(p.startswith(memory.NAME + ":") for p in verify([expectation], out))
    children, held, limit = _report(out)
    assert (children, limit) == (3, 2 * GIB) and held > 1.5 * limit


@pytest.mark.slow
@needs_memcg
def test_no_memory_cgroup_is_left_after_the_runs(graded):
    assert _leftovers() == []


@pytest.mark.slow
@needs_memcg
def test_the_outcome_carries_the_largest_peak_of_its_sandboxes(graded):
    """What a worker hands the batch, as the gradebook carries it (MiB, to a tenth): the reference's boxes stay far
    below the limit; the attack's reached it (2 GiB less a page at most, which rounds to 2048.0)."""
    rows = read_rows(graded[1]["on"][0])
    assert 0 < float(rows["reference"]["peak_memory_mib"]) < GIB / MIB and rows["reference"]["flags"] == ""
    assert float(rows[memory.NAME]["peak_memory_mib"]) == 2 * GIB / MIB
    assert memory.FLAG in rows[memory.NAME]["flags"]


@pytest.mark.slow
@needs_memcg
def test_the_groups_of_a_killed_run_are_removed_by_the_next_run(tmp_path):
    # A submission that waits at import: the run is surely still going when it is killed (a quick one could
    # finish, and remove its own group, between the look below and the kill).
    package = write_submission(tmp_path / "class" / "reference") / "student"
    (package / "__init__.py").write_text((package / "__init__.py").read_text() + "\nimport time\ntime.sleep(3600)\n")
    batch = subprocess.Popen([sys.executable, "-m", "autograder", "grade", str(tmp_path / "class"), "--out",
                              str(tmp_path / "out")], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    group = os.path.join(memcg.own_group(), f"{memcg.RUN_PREFIX}{batch.pid}")
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (os.path.isdir(group) and any(   # a worker's box: the probe is done
                name.startswith(cgroupfs.BOX_PREFIX) and name != "box-probe" for name in os.listdir(group))):
            time.sleep(0.05)
        assert os.path.isdir(group), "the run never made its group"
    finally:
        batch.send_signal(signal.SIGKILL)
    # Not reaped yet: while it is a zombie its pid is taken, so a run that another test starts meanwhile leaves its
    # group alone (remove_stale), and the run below is the one that removes it.
    try:
        deadline, empty_since = time.monotonic() + 30, None   # its template, worker and sandboxes follow it (parent-
        while time.monotonic() < deadline:                    # death signals): a sandbox forked just then may join late
            if any(_procs(root) for root, _dirs, _files in os.walk(group)):
                empty_since = None
            elif empty_since is None:
                empty_since = time.monotonic()
            elif time.monotonic() - empty_since > 1:
                break
            time.sleep(0.05)
        assert os.path.isdir(group)
    finally:
        batch.wait()
    run = memcg.create_run()
    try:
        assert not os.path.exists(group)
    finally:
        memcg.remove_run(run)


@needs_memcg
def test_a_box_group_counts_the_cpu_of_children_the_kernel_reaped(monkeypatch):
    """Children of a parent that ignores SIGCHLD are reaped by the kernel: their CPU time reaches no /proc file
    (the defence off: the tree's own times), but the box's group counted it, and the tree's CPU time is that."""
    run = memcg.create_run()
    group = memcg.create_box(run, "box-cpu", 256 * MIB)
    accounting = memcg.cpu_group(group)   # the group itself in v2; its twin in v1's cpuacct hierarchy
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            memcg.join(group)
            signal.signal(signal.SIGCHLD, signal.SIG_IGN)
            for _ in range(2):
                if os.fork() == 0:
                    end = time.process_time() + 0.4
                    while time.process_time() < end:
                        pass
                    os._exit(0)
            while len(processes.descendants(os.getpid())) > 1:   # gone, reaped by the kernel
                time.sleep(0.01)
            os.write(ready_write, b"1")
            time.sleep(60)
        finally:
            os._exit(0)
    try:
        os.close(ready_write)
        assert os.read(ready_read, 1) == b"1"
        counted = processes.tree_cpu_seconds(pid)
        assert processes.read_tree(pid).cpu == pytest.approx(counted, abs=0.05)
        monkeypatch.setattr(processes.cgroupfs, "box_cpu_seconds", lambda pid, read: None)
        assert counted >= 0.75 and processes.tree_cpu_seconds(pid) < 0.2
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        memcg.remove(group)
        memcg.remove_run(run)
    assert not os.path.exists(run) and not os.path.exists(accounting)
