"""`otter run -a dist/autograder.zip SUBMISSION.zip` (the console command, no Docker, from any folder) gives
the run-wide batch's scores, test by test, and Gradescope's results.json without starting a kernel, and tampering that
defeats plain otter (a planted .OTTER_LOG, forged results, modules shadowing otter's, a student package that
patches otter on import, a notebook that runs code) changes nothing."""
import json
import pathlib
import pickle
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor

import pytest

from autograder.samples import write_submission
from autograder.zoo.bugs import BUGS
from grader.gradescope import engine_bridge
from grader.scoring import error_results, is_public_check
from tests.patience import SAFETY_NET_S
from tests.routes import outcomes, submit

BUG = next(bug for bug in BUGS if bug.name == "padding-mask-ignored")
# Written by a payload only where it must never run: in otter's own process or kernel.
SLOW_FIXTURES = {"graded"}   # otter run and the batch command on five uploads (conftest.py)

MARKERS = ("otter-log", "results-pkl", "results-pkl-top", "init-in-otter", "shadow-otter", "shadow-dill",
           "notebook-ran")


class Payload:
    """Unpickling it opens (creates) the marker file: what a planted .OTTER_LOG would do to plain otter."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def cheat_init(markers) -> str:
    """Appended to student/__init__.py: patches otter's scoring whenever it is imported inside otter."""
    return f'''
import sys as _sys
if "otter.run.run_autograder" in _sys.modules:
    open({str(markers / "init-in-otter")!r}, "w").close()
try:
    import otter.test_files as _otter_results
    _otter_results.GradingResults.total = property(lambda self: 100.0)
    _otter_results.GradingResults.to_gradescope_dict = lambda self, config: {{"score": 100.0, "tests": []}}
except Exception:
    pass
'''


def notebook_running(code: str) -> str:
    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": code}
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return json.dumps({"cells": [cell], "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 4})


def write_cheat_zip(zip_path, folder, markers):
    """The stubs, plus every trick against plain otter."""
    package = write_submission(folder, solution=False) / "student"
    init = package / "__init__.py"
    init.write_text(init.read_text() + cheat_init(markers))
    forged = json.dumps({"score": 100.0, "tests": [{"name": "forged", "score": 100.0, "max_score": 100.0}]})
    with zipfile.ZipFile(zip_path, "w") as zf:
        for path in sorted(package.rglob("*.py")):
            zf.write(path, path.relative_to(folder).as_posix())
        zf.writestr(".OTTER_LOG", pickle.dumps(Payload(markers / "otter-log")))
        zf.writestr("results/results.pkl", pickle.dumps(Payload(markers / "results-pkl")))
        zf.writestr("results.pkl", pickle.dumps(Payload(markers / "results-pkl-top")))
        zf.writestr("results.json", forged)
        zf.writestr("results/results.json", forged)
        zf.writestr("otter/__init__.py", f"open({str(markers / 'shadow-otter')!r}, 'w').close()\n")
        zf.writestr("dill.py", f"open({str(markers / 'shadow-dill')!r}, 'w').close()\n")
        zf.writestr("attention.ipynb", notebook_running(f"open({str(markers / 'notebook-ran')!r}, 'w').close()"))
    return zip_path


OTTER = pathlib.Path(sys.executable).parent / "otter"   # the console command of this environment


def otter_run(autograder, submission, out) -> dict:
    """The console command, started from an empty folder far from the repository."""
    out.mkdir()
    elsewhere = out.parent / f"{out.name}-cwd"
    elsewhere.mkdir()
    proc = subprocess.run([str(OTTER), "run", "--no-logo", "-a", str(autograder), "-o", str(out), str(submission)],
                          cwd=elsewhere, capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # otter started no Jupyter kernel (one prints "[IPKernelApp] WARNING | Kernel is running over TCP ...").
    assert "IPKernelApp" not in proc.stdout + proc.stderr, "otter ran the notebook in a kernel"
    return json.loads((out / "results.json").read_text())


# Each upload that otter runs, and the case of the run-wide batch (tests/conftest.py's graded_zoo) it must equal:
# the cheat is the stubs plus every trick against plain otter, so it must score what the stubs do, test by test.
SAME_AS_IN_THE_ZOO = {"reference": "reference", "bug": f"bug-{BUG.name}", "cheat": "stubs"}


@pytest.fixture(scope="module")
def graded(dist, tmp_path_factory):
    """name -> otter run's results.json, and the markers folder."""
    root = tmp_path_factory.mktemp("otter-run")
    markers = root / "markers"
    markers.mkdir()
    zips = root / "zips"
    zips.mkdir()
    submit(write_submission(root / "work" / "reference"), zips / "reference.zip")
    submit(write_submission(root / "work" / "bug", overrides=BUG.overrides), zips / "bug.zip")
    write_cheat_zip(zips / "cheat.zip", root / "work" / "cheat", markers)
    with zipfile.ZipFile(zips / "nothing.zip", "w") as zf:
        zf.writestr("attention.ipynb", notebook_running("1 + 1"))
    autograder = dist / "autograder.zip"
    names = sorted(p.stem for p in zips.glob("*.zip"))
    with ThreadPoolExecutor(2) as pool:
        runs = pool.map(lambda n: otter_run(autograder, zips / f"{n}.zip", root / f"otter-{n}"), names)
        return dict(zip(names, runs, strict=True)), markers


def essentials(results: dict) -> tuple:
    """Score, every test's outcome, and how isolated the engine that graded it was."""
    return results["score"], outcomes(results), results["extra_data"]["gradebook_row"]["isolation"]


@pytest.mark.parametrize("name", sorted(SAME_AS_IN_THE_ZOO))
def test_otter_run_gives_the_run_wide_batchs_scores_test_by_test(graded, graded_zoo, name):
    assert essentials(graded[0][name]) == essentials(graded_zoo.results[SAME_AS_IN_THE_ZOO[name]])


def without_run_details(results: dict) -> dict:
    """Leaves out what differs between two runs of one upload: the timings, the temporary copy graded (its path and
    the digest of its zip) and the memory its sandboxes happened to hold."""
    results = json.loads(json.dumps(results))
    results.pop("execution_time")
    for key in ("seconds", "source", "content", "peak_memory_mib"):
        results["extra_data"]["gradebook_row"].pop(key)
    return results


def test_otter_run_writes_what_gradescope_gets(graded, gradescope_reference):
    by_otter = graded[0]["reference"]
    assert without_run_details(by_otter) == without_run_details(gradescope_reference.results)
    seen = {(is_public_check(t), t["visibility"]) for t in by_otter["tests"]}
    assert seen == {(False, "after_published"), (True, "visible")}   # the handout's public checks at once


def test_reference_scores_100_and_the_bug_loses_points_in_its_part(graded):
    results = graded[0]
    assert results["reference"]["score"] == 100.0
    bug = results["bug"]
    assert 0 < bug["score"] < 100
    lost = {int(t["name"].split()[1]) for t in bug["tests"] if t.get("score", 0) < t.get("max_score", 0)}
    assert BUG.part in lost and lost <= {5, 6}, lost   # the module's bug shows in its fused path too


def test_tampering_does_not_change_the_score_and_no_payload_runs(graded):
    by_otter = graded[0]["cheat"]
    assert by_otter["score"] == 0.0
    assert "forged" not in json.dumps(by_otter)
    assert sorted(p.name for p in graded[1].iterdir()) == []


def test_a_submission_without_student_package_gets_zero_and_the_reason(graded):
    by_otter = graded[0]["nothing"]
    assert by_otter["score"] == 0.0
    assert "grading ended with error. Reason: no student/ package" in by_otter["output"]


@pytest.mark.slow
def test_the_tampering_payloads_are_live(tmp_path):
    """Each payload fires where plain otter would give it the chance (so the test above can fail)."""
    markers = tmp_path / "markers"
    markers.mkdir()
    write_cheat_zip(tmp_path / "cheat.zip", tmp_path / "work", markers)
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(tmp_path / "cheat.zip") as zf:
        zf.extractall(unpacked)
    notebook = json.loads((unpacked / "attention.ipynb").read_text())
    script = f"""
import dill, sys
dill.load(open("results/results.pkl", "rb")); dill.load(open("results.pkl", "rb"))
from otter.check.logs import Log
try:
    Log.from_file(".OTTER_LOG")        # what otter run does with a log it finds
except Exception:
    pass
import otter.run.run_autograder        # the student's package imported inside otter's process
sys.path.insert(0, ".")
import student
from otter.test_files import GradingResults
assert GradingResults([]).total == 100.0, "the patch did not take"
exec({notebook["cells"][0]["source"]!r})
"""
    # -I: the unpacked folder is not on the path until the script puts it there (as otter would not).
    proc = subprocess.run([sys.executable, "-I", "-c", script], cwd=unpacked, capture_output=True, text=True,
                          timeout=SAFETY_NET_S)
    assert proc.returncode == 0, proc.stderr
    shadow = subprocess.run([sys.executable, "-c", "import otter, dill"], cwd=unpacked, capture_output=True,
                            text=True, timeout=SAFETY_NET_S, env={"PYTHONPATH": str(unpacked)})
    assert shadow.returncode == 0, shadow.stderr
    assert sorted(p.name for p in markers.iterdir()) == sorted(MARKERS)


def test_the_bridge_passes_the_engines_scores_on_and_refuses_its_failures(tmp_path):
    """A timeout graded in part keeps the points the engine computed; a row the engine failed on is no result."""
    (tmp_path / "results").mkdir()
    row = {"submission": "s", "status": "timeout", "message": "1 call(s) timed out: causal_mask", "score": 37.0}
    document = {"score": 37.0, "output": "timeout: 1 call(s) timed out", "tests": [],
                "extra_data": {"gradebook_row": row}}
    (tmp_path / "results" / "s.json").write_text(json.dumps(document))
    assert engine_bridge.results_from_out(tmp_path) == document
    row.update(status="error", message="grader error: the sandbox could not start", engine_failure=True)
    (tmp_path / "results" / "s.json").write_text(json.dumps(document))
    with pytest.raises(engine_bridge.GradingFailed, match="the sandbox could not start"):
        engine_bridge.results_from_out(tmp_path)


def test_the_bridge_says_when_the_engine_is_missing_or_fails(tmp_path):
    with pytest.raises(engine_bridge.GradingFailed, match="holds no grading engine"):
        engine_bridge.grade_submission(tmp_path, tmp_path)
    fake = fake_engine(tmp_path / "source", "import sys\nprint('engine exploded')\nsys.exit(3)\n")
    write_submission(tmp_path / "submission")
    with pytest.raises(engine_bridge.GradingFailed, match=r"exit 3\)[\s\S]*engine exploded"):
        engine_bridge.grade_submission(tmp_path / "submission", fake)


def fake_engine(source: pathlib.Path, command: str) -> pathlib.Path:
    """A source folder whose runtime batch command (`python -m grader`: grader/__main__.py) is `command`."""
    runtime = source / "grader"
    runtime.mkdir(parents=True)
    (runtime / "__init__.py").write_text("")
    (runtime / "__main__.py").write_text(command)
    return source


def test_pack_folder_keeps_links_as_links_and_leaves_out_otters_files(tmp_path):
    folder = write_submission(tmp_path / "submission")
    (folder / "student" / "secret.py").symlink_to("/etc/hostname")
    (folder / "tests").mkdir()
    (folder / "tests" / "q1.py").write_text("")
    (folder / "__init__.py").write_text("")
    packed = engine_bridge.pack_folder(folder, tmp_path / "packed.zip", skip={"tests", "__init__.py"})
    with zipfile.ZipFile(packed) as zf:
        infos = {info.filename: info for info in zf.infolist()}
    assert "student/masking.py" in infos and "tests/q1.py" not in infos and "__init__.py" not in infos
    link = infos["student/secret.py"]
    assert (link.external_attr >> 16) & 0o170000 == 0o120000


def test_a_result_written_before_a_non_zero_exit_is_the_students_not_an_engine_failure(tmp_path):
    """The batch command may exit non-zero when every row is an error; its result still says why."""
    document = {**error_results("error", "no student/ package found"),
                "extra_data": {"gradebook_row": {"status": "error", "message": "no student/ package found"}}}
    fake = fake_engine(tmp_path / "source", f"""import pathlib, sys
out = pathlib.Path(sys.argv[sys.argv.index("--out") + 1]) / "results"
out.mkdir(parents=True)
(out / "s.json").write_text({json.dumps(document)!r})
sys.exit(1)
""")
    write_submission(tmp_path / "submission")
    results = engine_bridge.grade_submission(tmp_path / "submission", fake)
    assert results["output"].startswith("Your submission could not be graded (error): no student/ package found")
