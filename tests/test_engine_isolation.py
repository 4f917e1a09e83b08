"""The sandbox's kernel layers and limits, each shown to hold, to be reported when it does not, and (where
it is the defence against an attack of issue 11) to matter: switched off, the attack gets through.

Fast tests fork small children of this process; the one that grades under a container-like seccomp
profile is slow.
"""
from __future__ import annotations

import os
import platform
import shutil
import struct
import subprocess
import sys
import time

import pytest

from autograder.adversarial import read_rows
from autograder.samples import write_submission
from grader.contain import cleanup, isolation, kernel, processes, seccomp
from grader.contain.limits import Limits
from grader.gateway import StudentError
from grader.gateway.client import SandboxGateway, SessionLog
from grader.paths import REPO
from grader.wire import messages
from tests.busy_machine import busy_cpu, reports_run_delay
from tests.fake_sandbox import FakeSpawner, calls_in_a_row, failing_call
from tests.patience import SAFETY_NET_S

as_root = pytest.mark.skipif(not kernel.privileged(), reason="needs root")
x86_64 = pytest.mark.skipif(platform.machine() != "x86_64", reason="the seccomp filter below is written for x86_64")


# ---------------------------------------------------------------- the probe and the report

@as_root
def test_as_root_every_layer_holds_on_this_kernel(sandbox_root):
    plan = isolation.probe(sandbox_root)
    assert plan.line() == "isolated: " + " ".join(isolation.LAYERS)


@pytest.mark.parametrize("layer", isolation.LAYERS)
def test_a_layer_switched_off_is_reported_by_name_and_the_others_still_hold(layer, sandbox_root, monkeypatch):
    monkeypatch.setenv(isolation.DISABLE_ENV, layer)
    plan = isolation.probe(sandbox_root)
    assert (layer, f"switched off by {isolation.DISABLE_ENV}") in plan.missing
    assert f"no {layer} (switched off by {isolation.DISABLE_ENV})" in plan.line()
    expected = [name for name in isolation.LAYERS   # a cgroup of its own, like a user id of its own: root only
                if name != layer and (name not in ("uid", "memory") or kernel.privileged())]
    assert list(plan.held) == expected, plan.line()
    assert plan.line().startswith("partially isolated: ")
    assert os.listdir(sandbox_root) == []   # the probe leaves nothing behind


@pytest.mark.parametrize("layer", isolation.TABLE, ids=lambda layer: layer.name)
def test_each_layers_proof_fails_outside_a_box(layer, tmp_path):
    """The probe believes a layer only on its proof: here, on the grader's side of every layer, no proof holds."""
    bait = tmp_path / "bait"
    bait.write_text("readable by anyone outside a box")
    box = isolation.Box(str(tmp_path), str(tmp_path / "scratch"), isolation.sandbox_uid(os.getpid()),
                        memory_group=str(tmp_path / "no-group"))
    assert not layer.in_force(box, str(bait))


def test_with_every_layer_off_the_run_says_it_is_not_isolated(sandbox_root, monkeypatch):
    monkeypatch.setenv(isolation.DISABLE_ENV, ",".join(isolation.LAYERS))
    assert isolation.probe(sandbox_root).line().startswith("not isolated: no pid (switched off")


def test_a_plan_travels_as_json_unchanged():
    plan = isolation.Plan(("pid", "net"), (("landlock", "not supported by kernel 5.4"),), True, 0)
    assert isolation.Plan.from_json(plan.to_json()) == plan
    assert plan.line() == "partially isolated: pid net; no landlock (not supported by kernel 5.4)"


# ---------------------------------------------------------------- a container that refuses namespaces

def deny_namespaces_and_landlock() -> None:
    """preexec_fn: a seccomp filter as a locked-down container has: unshare(2) refused (EPERM), Landlock unknown
    (ENOSYS, as on a kernel older than 5.13). Inherited by everything the engine forks."""
    def instruction(code, jt, jf, k):
        return struct.pack("HBBI", code, jt, jf, k)

    load_arch, load_nr, jump_eq, ret = 0x20, 0x20, 0x15, 0x06
    allow, errno_ = 0x7FFF0000, 0x00050000
    program = b"".join([
        instruction(load_arch, 0, 0, 4), instruction(jump_eq, 1, 0, 0xC000003E), instruction(ret, 0, 0, allow),
        instruction(load_nr, 0, 0, 0),
        instruction(jump_eq, 0, 1, 272), instruction(ret, 0, 0, errno_ | 1),     # unshare: EPERM
        instruction(jump_eq, 0, 1, 444), instruction(ret, 0, 0, errno_ | 38),    # landlock_create_ruleset: ENOSYS
        instruction(ret, 0, 0, allow),
    ])
    try:
        seccomp.load(program)
    except OSError:
        os._exit(99)


@x86_64
@pytest.mark.slow
def test_in_a_container_that_refuses_namespaces_the_engine_degrades_and_says_so(tmp_path):
    """Gradescope's Docker refuses unshare by its default seccomp profile; an old kernel has no Landlock.
    The engine must still grade (the reference 100, the stubs 0) and say exactly what it went without."""
    write_submission(tmp_path / "class" / "reference")
    write_submission(tmp_path / "class" / "stubs", solution=False)
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(tmp_path / "class"), "--out",
                           str(tmp_path / "out"), "--workers", "2"], cwd=REPO, capture_output=True, text=True,
                          timeout=SAFETY_NET_S, preexec_fn=deny_namespaces_and_landlock)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = read_rows(tmp_path / "out")
    assert {name: row["score"] for name, row in rows.items()} == {"reference": 100.0, "stubs": 0.0}
    line = rows["reference"]["isolation"]
    for layer in ("pid", "ipc", "net", "mnt"):
        assert f"no {layer} (refused by the kernel: Operation not permitted" in line, line
    assert f"no landlock (not supported by kernel {platform.release()})" in line
    # cgroups are no namespace: the memory layer holds; a seccomp filter needs neither root nor namespaces
    held = "uid memory seccomp" if kernel.privileged() else "seccomp"
    assert line.startswith(f"partially isolated: {held}; no pid")
    assert f"isolation: {line}" in proc.stdout


@as_root
def test_in_a_container_ipc_objects_do_not_outlive_the_sandbox(tmp_path):
    """Without an IPC namespace of its own a box's System V objects and POSIX queues would outlive it (they did):
    the seccomp filter refuses them, the worker removes what its user owns, and the box may make no POSIX queue at
    all (RLIMIT_MSGQUEUE 0)."""
    from autograder import adversarial
    from tests.test_engine import clean_up_after
    root = tmp_path / "zoo"
    root.mkdir()
    context = adversarial.base.Context(root, adversarial.markers_folder(root))
    context.markers.mkdir(mode=0o700)
    chosen = [entry for entry in adversarial.entries(root) if entry.expectation.name in
              ("reference", "escape-outlive-the-sandbox")]
    for entry in chosen:
        entry.write(root / entry.expectation.name, context)
    expectations = [entry.expectation for entry in chosen]
    try:
        proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(root), "--out", str(tmp_path / "out"),
                               "--no-similarity"], cwd=REPO, capture_output=True, text=True, timeout=SAFETY_NET_S,
                              preexec_fn=deny_namespaces_and_landlock)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "no ipc (refused" in read_rows(tmp_path / "out")["reference"]["isolation"]
        assert adversarial.verify(expectations, tmp_path / "out") == []
    finally:
        clean_up_after(expectations)
        adversarial.remove_planted(root)


# ---------------------------------------------------------------- clean-up never acts as root on a student's path

@as_root
def test_removing_through_a_swapped_parent_deletes_roots_files_only_when_done_as_root(tmp_path):
    """Issue 11, class 1, made deterministic: a folder the box may write (shared/w) becomes a link to a root-only
    folder just before the clean-up removes shared/w/victim. As root (the old clean-up) root's file goes; as the
    box's own user (the engine's clean-up) the kernel refuses."""
    uid = isolation.sandbox_uid(os.getpid())
    for as_root_user in (True, False):
        case = tmp_path / ("root" if as_root_user else "user")
        shared, bait = case / "shared", case / "bait"
        (bait / "victim").mkdir(parents=True)
        (bait / "victim" / "keep.txt").write_text("root's")
        shared.mkdir()
        os.chmod(shared, 0o1777)
        os.chmod(case, 0o755)
        os.chmod(tmp_path, 0o755)
        os.symlink(bait, shared / "w")           # the swap has happened: shared/w now leads to root's folder
        target = str(shared / "w" / "victim")
        if as_root_user:
            shutil.rmtree(target, ignore_errors=True)
        else:
            cleanup.as_user(uid, lambda target=target: cleanup._remove(target))
        assert (bait / "victim" / "keep.txt").exists() != as_root_user


# ---------------------------------------------------------------- limits in CPU time, not wall-clock time

def timed_call(behaviour: str, limits: Limits, cpu: int | None = None) -> tuple[StudentError, float]:
    started = time.monotonic()
    error = failing_call(FakeSpawner(behaviour, cpu=cpu), limits, SessionLog())
    return error, time.monotonic() - started


def test_a_call_that_waits_without_computing_is_not_timed_out_by_its_cpu_limit():
    """A loaded machine looks, from the sandbox, like time passing without CPU: the call still answers."""
    error, _seconds = timed_call("1.5", Limits(call_timeout=0.5, wall_factor=10))
    assert (error.type_name, error.message) == ("ValueError", "sandbox 1")


def test_timed_by_the_wall_clock_the_same_call_would_have_failed():
    """Defence off: a wall-clock limit of the same 0.5 s (the engine before) times the waiting call out."""
    error, _seconds = timed_call("1.5", Limits(call_timeout=0.5, wall_factor=1))
    assert error.type_name == "Timeout" and "waiting or sleeping" in error.message


HELD_BACK = Limits(call_timeout=5.0, wall_factor=0.2)   # 5 s of CPU time, 1 s of load-free time per call


def call_held_back_by_load() -> tuple[StudentError, float]:
    """A call that computes 0.3 CPU-seconds on a CPU shared with the spinners: about 1.8 s of wall-clock time."""
    with busy_cpu(0):
        return timed_call("compute:0.3", HELD_BACK, cpu=0)


@pytest.mark.slow   # processes spin beside it for seconds
def test_a_call_held_back_by_a_busy_machine_is_not_timed_out():
    """Issue 29, class 0: the per-call cap on time that is not CPU time counts no wait for a CPU."""
    reports_run_delay()
    error, seconds = call_held_back_by_load()
    assert seconds > HELD_BACK.call_wall_timeout, f"the load did not hold the call back ({seconds:.1f} s)"
    assert (error.type_name, error.message) == ("ValueError", "sandbox 1")


@pytest.mark.slow   # processes spin beside it for seconds
def test_timed_by_the_wall_clock_the_call_held_back_by_load_would_have_failed(monkeypatch):
    """Defence off: with no run-queue delay read, the load-free clock is the wall clock, and the same call times
    out as if it slept."""
    monkeypatch.setattr(processes, "run_delay_seconds", lambda pid, files=None: None)
    error, _seconds = call_held_back_by_load()
    assert error.type_name == "Timeout" and "waiting or sleeping" in error.message


def test_sleeping_counts_against_the_submissions_budget_and_ends_it_keeping_what_ran():
    """The budget holds load-free time too: calls that sleep spend it, the one that reaches it is stopped as the
    budget's end (not as a strike of that function), and every later call is refused unrun."""
    spawner = FakeSpawner("0.8")
    log = SessionLog()
    gateway = SandboxGateway(spawner, Limits(call_timeout=5.0, wall_factor=0.2, budget=1.5), log)
    try:
        errors = calls_in_a_row(gateway)
    finally:
        gateway.close()
        spawner.reap()
    assert [e.type_name for e in errors] == ["ValueError", "Timeout", "Timeout"], errors
    assert "budget" in errors[1].message and "ran out during scaled_scores" in errors[1].message
    assert "this call was not run" in errors[2].message
    assert log.budget_exhausted and not log.timeouts


def test_a_call_that_computes_forever_is_stopped_after_its_cpu_seconds():
    error, seconds = timed_call("spin", Limits(call_timeout=0.5, wall_factor=40))
    assert error.type_name == "Timeout" and "CPU time" in error.message
    assert seconds < 15


def test_the_cpu_time_of_a_process_tree_counts_its_children():
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        child = os.fork()
        deadline = time.process_time() + 0.6
        while time.process_time() < deadline:
            pass
        if child:
            os.waitpid(child, 0)
            os.write(write_end, b"x")
            time.sleep(30)
        os._exit(0)
    try:
        os.read(read_end, 1)
        assert processes.tree_cpu_seconds(pid) >= 1.0   # its own 0.6 s and its child's
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(read_end)
        os.close(write_end)


# ---------------------------------------------------------------- two answers a test compares come from two processes

def _answers(spawner: FakeSpawner, afresh_between: bool) -> tuple[list[str], bool]:
    """The three answers, and whether every sandbox ended once the gateway closed."""
    gateway = SandboxGateway(spawner, Limits(), SessionLog())
    try:
        answers = [error.message for error in calls_in_a_row(gateway, afresh_between=afresh_between)]
    finally:
        gateway.close()
    deadline = time.monotonic() + 10
    while spawner.pids and time.monotonic() < deadline:
        processes.reap(spawner.pids, block=False)
        time.sleep(0.05)
    ended = not spawner.pids
    for pid in spawner.pids:   # a sandbox close() left running: the test fails, and leaves nothing behind
        os.kill(pid, 9)
    spawner.reap()
    return answers, ended


def test_after_start_afresh_the_next_answer_comes_from_a_new_sandbox():
    """Issue 29, class 5: a remembered answer cannot stand in for the second of two answers a test compares."""
    assert _answers(FakeSpawner("0"), afresh_between=True) == (["sandbox 1", "sandbox 2", "sandbox 3"], True)


def test_without_start_afresh_every_answer_comes_from_one_sandbox():
    """Defence off: one process answers both calls, so it can hand its first answer back."""
    assert _answers(FakeSpawner("0"), afresh_between=False) == (["sandbox 1"] * 3, True)


# ---------------------------------------------------------------- what a sandbox started after hidden calls may say

LEAK = "hidden lengths [3, 5, 4]"


@pytest.mark.parametrize("report", ["a failed import", "an unloadable name"])
def test_a_sandbox_started_after_hidden_calls_reports_no_import_text_of_its_own(report):
    """Issue 31, class 2: an import's report reaches the row's message, which students read at once. A sandbox
    started after hidden calls had run could only have learned them from an earlier one; its words are not shown
    (a fixed text is), and the first sandbox's, which ran before any hidden call, still are."""
    said = (messages.Failure("ValueError", LEAK, []) if report == "a failed import" else
            messages.Ready({"scaled_scores": LEAK}, []))
    for first in (True, False):
        greeting = messages.Locked().encode() + said.encode()
        spawner = (FakeSpawner(greeting=greeting) if first else
                   FakeSpawner(later_greeting=greeting))
        log = SessionLog()
        gateway = SandboxGateway(spawner, Limits(), log)
        try:
            errors = calls_in_a_row(gateway, 2, afresh_between=True)
        finally:
            gateway.close()
            spawner.reap()
        reported = (log.import_failure.message if log.import_failure else "") + " ".join(log.unloadable.values())
        if first:   # before any hidden call: the student's own words are shown, as they should be
            assert LEAK in reported, reported
        else:
            assert LEAK not in reported and not any(LEAK in error.message for error in errors), (reported, errors)


@as_root
def test_a_python_reached_through_a_link_under_tmp_is_refused_with_its_real_place(tmp_path):
    """Each sandbox's private /tmp hides a link there: torch's modules loaded on demand would not be found, and the
    reference scored 0. The batch refuses before grading anything and names the environment's real place."""
    linked = tmp_path / "venv"
    linked.symlink_to(os.path.realpath(sys.prefix), target_is_directory=True)
    write_submission(tmp_path / "class" / "reference")
    proc = subprocess.run([str(linked / "bin" / os.path.basename(sys.executable)), "-m", "autograder", "grade",
                           str(tmp_path / "class"), "--out", str(tmp_path / "out")], cwd=REPO, capture_output=True,
                          text=True, timeout=SAFETY_NET_S)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"reached through {linked}" in proc.stderr
    assert os.path.join(os.path.realpath(sys.prefix), "bin") in proc.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()


def test_only_a_link_under_tmp_to_elsewhere_is_taken_for_a_hidden_installation(tmp_path, monkeypatch):
    """A virtual environment that really lies under /tmp is bound back into each box (and grades: the fresh-clone
    CI runs from /tmp); its bin/python links to the base interpreter, which must not count. A link under /tmp
    leads nowhere in a box, wherever it points (the fresh-clone CI links to a venv that is itself in /tmp)."""
    real = tmp_path / "venv" / "lib" / "site-packages"
    real.mkdir(parents=True)
    (tmp_path / "venv" / "bin").mkdir()
    (tmp_path / "venv" / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    monkeypatch.setattr(sys, "path", [str(real)])
    assert isolation.linked_through_box_tmp() == []
    elsewhere, beside = tmp_path / "linked", tmp_path / "linked-beside"
    elsewhere.symlink_to(os.path.realpath(REPO), target_is_directory=True)
    beside.symlink_to(real, target_is_directory=True)   # a link to a real place that is under /tmp too
    monkeypatch.setattr(sys, "path", [str(real), str(elsewhere), str(beside)])
    assert isolation.linked_through_box_tmp() == [str(elsewhere), str(beside)]


def _grade_zoo_entries(tmp_path, names, layers_off: str, out: str):
    """Grade the named entries of the adversarial zoo in a container that refuses namespaces, with layers_off
    switched off: (the batch's process, the entries' expectations)."""
    from autograder import adversarial
    root = tmp_path / "zoo"
    if not root.exists():
        root.mkdir()
        context = adversarial.base.Context(root, adversarial.markers_folder(root))
        context.markers.mkdir(mode=0o700)
        for entry in adversarial.entries(root):
            if entry.expectation.name in names:
                entry.write(root / entry.expectation.name, context)
    expectations = [entry.expectation for entry in adversarial.entries(root) if entry.expectation.name in names]
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", *(str(root / name) for name in names),
                           "--out", str(tmp_path / out), "--no-similarity", "--workers", "2"], cwd=REPO,
                          capture_output=True, text=True, timeout=SAFETY_NET_S, preexec_fn=deny_namespaces_and_landlock,
                          env={**os.environ, isolation.DISABLE_ENV: layers_off})
    return proc, expectations


@as_root
@x86_64
@pytest.mark.slow
def test_where_no_other_layer_holds_the_filter_keeps_the_gradebook_and_the_batch(tmp_path):
    """A box with no namespace, no Landlock and the grader's own user id: an ordinary user in a container that
    refuses namespaces, here played by root with the uid layer switched off (worse: root may read, write and
    signal anything). The seccomp filter still keeps every row the grader's, the batch alive and the files
    unlocked. With the filter switched off as well, each of those attacks gets through."""
    from autograder import adversarial
    attacks = ("cheat-forge-results", "escape-lock-a-read-only-file")
    proc, expectations = _grade_zoo_entries(tmp_path, ("reference", *attacks, "cheat-kill-grader"), "uid", "on")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = read_rows(tmp_path / "on")
    assert rows["reference"]["isolation"].startswith("partially isolated: memory seccomp; ")
    assert adversarial.verify(expectations, tmp_path / "on") == []
    # What the code says at import could be the hidden tests it read there: its words are not the row's message.
    words = write_submission(tmp_path / "words", solution=False, overrides={
        "scaling.py": "raise ImportError(open(__file__).read()[:20] + 'WORDS-OF-THE-IMPORT')\n"})
    subprocess.run([sys.executable, "-m", "autograder", "grade", str(words), "--out", str(tmp_path / "words-out"),
                    "--no-similarity"], cwd=REPO, capture_output=True, timeout=SAFETY_NET_S,
                   preexec_fn=deny_namespaces_and_landlock, env={**os.environ, isolation.DISABLE_ENV: "uid"})
    message = read_rows(tmp_path / "words-out")["words"]["message"]
    assert "WORDS-OF-THE-IMPORT" not in message and "its words are not shown" in message, message
    # The defence off: forged rows and locks get through; the kill, in a batch of its own, ends the batch's worker.
    proc, expectations = _grade_zoo_entries(tmp_path, ("reference", *attacks), "uid,seccomp", "off")
    problems = adversarial.verify(expectations, tmp_path / "off") if proc.returncode == 0 else ["the batch died"]
    assert problems == ["the batch died"] or (any("forged by a submission" in p for p in problems)
                                              and any(p.startswith(attacks[1] + ":") for p in problems)), problems
    proc, expectations = _grade_zoo_entries(tmp_path, ("reference", "cheat-kill-grader"), "uid,seccomp", "killed")
    problems = adversarial.verify(expectations, tmp_path / "killed") if proc.returncode == 0 else ["the batch died"]
    assert problems, "the kill got nowhere with the filter off"
