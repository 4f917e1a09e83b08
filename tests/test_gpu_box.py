"""A box given a GPU opens exactly that GPU's driver files (grader/contain/gpu.py), proven without a GPU: on a
stand-in tree of the files as the NVIDIA driver names them, by a child under the Landlock rules a box gets."""
import json
import os

import pytest

from grader.contain import gpu, isolation, kernel, processes

DEVICES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidia1", "nvidia-modeset",
           "nvidia-caps/nvidia-cap1", "dri/card0", "null-lookalike")
PROC = ("version", "params", "gpus/0000:01:00.0/information", "gpus/0000:02:00.0/information")


def stand_in_driver(root):
    for name in DEVICES:
        (root / "dev" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "dev" / name).write_text("device")
    for name in PROC:
        (root / "proc/driver/nvidia" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "proc/driver/nvidia" / name).write_text("driver")
    return root


def landlock_abi() -> int:
    try:
        return kernel.landlock_abi()
    except OSError:
        return 0


def opened_under(rules, paths) -> dict[str, list[str]]:
    """In a child under exactly these Landlock rules: {"read": paths it could read, "write": ... write}."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(read_end)
            kernel.landlock_enforce(kernel.landlock_ruleset(kernel.landlock_abi(), rules, deny_tcp=False,
                                                            scope=False))
            found = {"read": [], "write": []}
            for path in paths:
                for mode, flag in (("read", os.O_RDONLY), ("write", os.O_WRONLY)):
                    try:
                        os.close(os.open(path, flag))
                        found[mode].append(path)
                    except OSError:
                        pass
            os.write(write_end, json.dumps(found).encode())
        except BaseException:  # noqa: BLE001 - the parent reads no answer
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as handle:
        answer = handle.read()
    processes.reap([pid])
    return json.loads(answer)


needs_landlock = pytest.mark.skipif(landlock_abi() < 5, reason="needs Landlock ABI 5 (device ioctls) to decide")


@needs_landlock
@pytest.mark.parametrize("mine,other", [(0, 1), (1, 0)])
def test_a_box_opens_its_gpus_driver_files_and_nothing_beside_them(tmp_path, mine, other):
    root = stand_in_driver(tmp_path / "root")
    everything = [str(path) for path in sorted(root.rglob("*")) if path.is_file()]
    found = opened_under(gpu.allowlist(mine, str(root)), everything)
    devices = {str(root / "dev" / name) for name in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", f"nvidia{mine}")}
    driver = {str(root / "proc/driver/nvidia" / name) for name in PROC}
    assert set(found["read"]) == devices | driver
    assert set(found["write"]) == devices            # the driver's files under /proc: read only
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
