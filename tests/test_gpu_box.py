"""A box given a GPU opens exactly that GPU's driver files (grader/contain/gpu.py), proven without a GPU: on a
stand-in tree of the files as the NVIDIA driver names them, by a child under the Landlock rules a box gets."""
import contextlib
import os
import subprocess
import sys

import pytest
import torch

from autograder.samples import write_submission
from grader.contain import gpu, isolation, kernel, processes
from grader.contain.limits import Limits
from grader.contain.load_free import LoadFreeClock
from grader.paths import REPO
from grader.run import batch, run_settings, sandbox
from grader.run.outcome import Outcome
from grader.run.pool import Job
from grader.run.progress import Progress
from grader.run.request import Request
from grader.run.run_settings import RunSettings
from grader.run.submissions import Submission
from tests.patience import SAFETY_NET_S

DEVICES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidia1", "nvidia-modeset",
           "nvidia-caps/nvidia-cap1", "dri/card0", "null-lookalike")
PROC = ("version", "params", "gpus/0000:01:00.0/information", "gpus/0000:02:00.0/information")
SYS = ("devices/pci0000:00/0000:01:00.0/numa_node", "module/nvidia/version")


def stand_in_driver(root):
    for name in DEVICES:
        (root / "dev" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "dev" / name).write_text("device")
    for name in PROC:
        (root / "proc/driver/nvidia" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "proc/driver/nvidia" / name).write_text("driver")
    for name in SYS:
        (root / "sys" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "sys" / name).write_text("topology")
    (root / "sys" / "kernel").mkdir()
    (root / "sys" / "kernel" / "secret").write_text("not the GPU's")
    return root


def landlock_abi() -> int:
    try:
        return kernel.landlock_abi()
    except OSError:
        return 0


def opened_under(rules, paths) -> dict[str, list[str]]:
    """In a child under exactly these Landlock rules: {"read": paths it could read, "write": ... write}."""
    def attempt():
        kernel.landlock_enforce(kernel.landlock_ruleset(kernel.landlock_abi(), rules, deny_tcp=False, scope=False))
        found = {"read": [], "write": []}
        for path in paths:
            for mode, flag in (("read", os.O_RDONLY), ("write", os.O_WRONLY)):
                try:
                    os.close(os.open(path, flag))
                    found[mode].append(path)
                except OSError:
                    pass
        return found
    return processes.answer_of_child(attempt)


needs_landlock = pytest.mark.skipif(landlock_abi() < 5, reason="needs Landlock ABI 5 (device ioctls) to decide")


@needs_landlock
@pytest.mark.parametrize("mine,other", [(0, 1), (1, 0)])
def test_a_box_opens_its_gpus_driver_files_and_nothing_beside_them(tmp_path, mine, other):
    root = stand_in_driver(tmp_path / "root")
    everything = [str(path) for path in sorted(root.rglob("*")) if path.is_file()]
    found = opened_under(gpu.allowlist(mine, str(root)), everything)
    devices = {str(root / "dev" / name) for name in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", f"nvidia{mine}")}
    driver = {str(root / "proc/driver/nvidia" / name) for name in PROC} | {str(root / "sys" / name) for name in SYS}
    assert set(found["read"]) == devices | driver
    assert set(found["write"]) == devices            # the driver's files under /proc and /sys: read only
    assert str(root / "dev" / f"nvidia{other}") not in found["read"]   # never another box's GPU


@needs_landlock
def test_without_the_allowlist_a_box_opens_no_driver_file(tmp_path):
    """The defence off: the same child without the GPU's rules opens none of them (and with every file allowed,
    all of them: the stand-in is readable, so only the rules decide)."""
    root = stand_in_driver(tmp_path / "root")
    everything = [str(path) for path in sorted(root.rglob("*")) if path.is_file()]
    assert opened_under([], everything) == {"read": [], "write": []}
    allowed = opened_under([(str(root), kernel.landlock_fs_rights(landlock_abi()))], everything)
    assert set(allowed["read"]) == set(allowed["write"]) == set(everything)


def test_the_gpus_are_read_from_the_drivers_devices_and_their_absence_is_said(tmp_path):
    with pytest.raises(gpu.GpuError, match=r"no NVIDIA driver here: .*nvidiactl is missing"):
        gpu.require(str(tmp_path))
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "nvidiactl").write_text("")
    with pytest.raises(gpu.GpuError, match="shows no GPU here"):
        gpu.require(str(tmp_path))
    root = stand_in_driver(tmp_path / "root")
    assert gpu.require(str(root)) == gpu.gpus(str(root)) == [0, 1]
    with pytest.raises(ValueError):
        gpu.allowlist(-1)


def test_a_box_given_a_gpu_has_its_driver_files_among_its_rules_and_one_without_none(tmp_path):
    plan = isolation.Plan(("mnt", "landlock"), landlock_abi=landlock_abi())
    given = isolation.Box(str(tmp_path), str(tmp_path / "scratch"), None, gpu=1)
    rules = dict(isolation._landlock_rules(plan, given, own_proc=True))
    assert rules["/dev/nvidia1"] == gpu.DEVICE_RIGHTS and "/dev/nvidia0" not in rules
    without = isolation._landlock_rules(plan, isolation.Box(str(tmp_path), str(tmp_path / "scratch"), None),
                                        own_proc=True)
    assert not [path for path, _ in without if "nvidia" in path]


# ---------------------------------------------------------------- a GPU run (python -m grader --gpu)

@pytest.mark.skipif(os.path.exists("/dev/nvidiactl"), reason="this machine has the NVIDIA driver")
def test_a_gpu_run_is_refused_here_saying_what_is_missing(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "grader", str(tmp_path), "--out", str(tmp_path / "out"), "--gpu"],
                          cwd=REPO, capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode == 2, proc.stderr
    assert "grade: --gpu: no NVIDIA driver here: /dev/nvidiactl is missing" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()


def test_a_gpu_runs_settings_reach_every_process_and_its_line_says_what_a_box_reaches():
    settings = RunSettings(Limits(), isolation.Plan(("landlock",)), "/s", "/t", (0, 1))
    assert RunSettings.from_json(settings.to_json()) == settings
    assert batch.isolation_note(isolation.Plan(("landlock",)), [], (0, 1)).endswith(
        "; GPU: each submission's sandboxes one of 2, one at a time (its driver files alone)")
    assert "GPU" not in batch.isolation_note(isolation.Plan(("landlock",)), [])
    assert run_settings.gpu_environment(1) == {"CUDA_VISIBLE_DEVICES": "1"}
    assert run_settings.gpu_environment(None) == run_settings.NO_GPU == {"CUDA_VISIBLE_DEVICES": ""}


class RecordingTemplate:
    """Stands in for the template: each job's result is in at once; records the GPU each job was given and the GPUs
    of the jobs still running when it started (a job runs until the batch closes its result pipe)."""

    def __init__(self):
        self.given, self.pipes = [], {}   # (gpu, GPUs running then); result pipe -> its job's GPU

    def start(self, source, keep=None, gpu=None, *, more=False):
        running = sorted(job_gpu for fd, job_gpu in self.pipes.items() if _is_open(fd))
        read_end, write_end = os.pipe()
        os.write(write_end, Outcome("graded", score=1.0).to_json().encode())
        os.close(write_end)
        self.given.append((gpu, running))
        self.pipes[read_end] = gpu   # a number the batch closed may come back: it is this job's now
        return Job(os.getpid(), read_end, LoadFreeClock(os.getpid()), gpu)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def test_each_job_of_a_gpu_run_gets_a_gpu_no_running_job_has(tmp_path):
    (tmp_path / "results").mkdir()
    template = RecordingTemplate()
    todo = [Submission(f"s{n}", f"s{n}", f"/class/s{n}", f"/class/s{n}") for n in range(7)]
    with open(os.devnull, "w") as quiet:
        request = Request((), tmp_path, workers=2, gpus=(0, 1))
        rows = batch._grade(template, todo, tmp_path, request, "n", [], Progress(7, 0, quiet))
    assert len(rows) == 7 and all(gpu in (0, 1) for gpu, _ in template.given)
    assert all(gpu not in busy for gpu, busy in template.given)   # never a GPU a running job has
    assert [gpu for gpu, _ in template.given[:2]] == [0, 1]
    with pytest.raises(ValueError, match="one submission per GPU at a time"):
        Request([str(tmp_path)], tmp_path / "out", workers=3, gpus=(0, 1))


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine where CUDA cannot start")
def test_where_cuda_cannot_start_in_a_box_a_gpu_run_gives_the_graders_error_never_a_score(tmp_path):
    """On an H200 (2026-11-28) CUDA did not start under the box's layers and the reference lost 9 points to its GPU
    tests. Here CUDA cannot start at all, as there: the box runs no student code, and the row is the grader's error
    (an engine failure, graded again by the next run) saying so, not a score."""
    write_submission(tmp_path / "class" / "reference", solution=True)
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
        run = batch.grade_all(Request([str(tmp_path / "class")], tmp_path / "out", gpus=(0,)))
    [row] = run.rows
    assert row.status == "error" and sandbox.CUDA_DID_NOT_START in row.message, row
