"""Where the kernel gives no private tmpfs (a container that refuses namespaces), what a box writes is bounded all
the same: the worker measures it from outside (disk.py) and stops the box at the limit the tmpfs would set."""
from __future__ import annotations

import csv
import os
import subprocess
import sys

import pytest

from autograder.samples import write_submission
from grader.contain import disk
from grader.paths import REPO
from tests.patience import SAFETY_NET_S
from tests.test_engine_isolation import deny_namespaces_and_landlock

MIB = 1 << 20


def test_what_a_folder_holds_is_counted_without_following_links(tmp_path):
    box = tmp_path / "box"
    (box / "deep" / "deeper").mkdir(parents=True)
    (box / "deep" / "deeper" / "data").write_bytes(os.urandom(3 * MIB))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "big").write_bytes(os.urandom(8 * MIB))
    (box / "link").symlink_to(elsewhere, target_is_directory=True)
    used = disk.held(str(box), None, 64 * MIB)
    assert 3 * MIB <= used < 4 * MIB, used


def test_a_flood_of_empty_files_counts_and_the_walk_stops_past_the_limit(tmp_path):
    for index in range(2000):
        (tmp_path / str(index)).touch()
    assert disk.held(str(tmp_path), None, 1 << 30) >= 2000 * disk.ENTRY_BYTES
    assert disk.held(str(tmp_path), None, 100 * disk.ENTRY_BYTES) <= 102 * disk.ENTRY_BYTES


FILLER = '''
import os, time
for index in range(40):   # 160 MiB in files of 4 MiB (each under the 16 MiB a file may hold)
    with open(os.path.join(os.environ["HOME"], f"fill-{index}"), "wb") as handle:
        handle.write(os.urandom(4 << 20))
    time.sleep(0.05)
open(os.path.join(os.environ["HOME"], "all-written"), "w").close()
'''

GRADE = '''
import sys
from grader.run import batch
from grader.run.request import Request
from grader.contain.limits import Limits
limit = 32 << 20 if sys.argv[3] == "on" else 1 << 40   # off: a limit nothing reaches
batch.grade_all(Request([sys.argv[1]], sys.argv[2], limits=Limits(scratch_bytes=limit)))
'''


@pytest.mark.slow
def test_in_a_container_a_box_filling_the_disk_is_stopped_at_the_scratch_limit(tmp_path):
    submission = write_submission(tmp_path / "class" / "filler", solution=False)
    (submission / "student" / "__init__.py").write_text((submission / "student" / "__init__.py").read_text()
                                                         + FILLER)
    flags = {}
    for defence in ("on", "off"):
        out = tmp_path / f"out-{defence}"
        proc = subprocess.run([sys.executable, "-c", GRADE, str(tmp_path / "class"), str(out), defence], cwd=REPO,
                              capture_output=True, text=True, timeout=SAFETY_NET_S,
                              preexec_fn=deny_namespaces_and_landlock)
        assert proc.returncode == 0, proc.stderr[-3000:]
        (row,) = csv.DictReader((out / "grades.csv").open())
        assert "no mnt" in row["isolation"], row["isolation"]
        flags[defence] = row["flags"], row["message"]
    assert "stopped at the disk limit (32 MiB" in flags["on"][0], flags["on"]
    assert "disk limit" not in flags["off"][0] and "ended" not in flags["off"][1], flags["off"]
