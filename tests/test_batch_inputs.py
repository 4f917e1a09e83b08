"""What graders pass to `python -m autograder grade`: Gradescope exports (their folder or zip, named),
flat uploads of the modules, and the gradebook that goes back into a roster."""
import csv
import dataclasses
import io
import os
import subprocess
import sys
import zipfile

import pytest

from autograder.exports import read_metadata
from autograder.samples import write_submission
from autograder.stubs import GRADED_MODULES
from grader.paths import REPO, STUDENT_DIR
from grader.row import Row
from grader.run import gradebook, submissions, unpacking
from tests.patience import SAFETY_NET_S

METADATA = """\
submission_101:
  :submitters:
  - :name: Ada Lovelace
    :sid: '0042'
    :email: ada@example.edu
  - :name: Alan Turing
    :sid: '0043'
    :email: alan@example.edu
  :created_at: 2026-11-20 10:00:00.000000000 -08:00
submission_102:
  :submitters:
  - :name: Grace Hopper
    :sid: '0044'
    :email: grace@example.edu
"""


def export_folder(root, flat_second: bool = False):
    """An export as Gradescope writes it: assignment_7_export/ with the metadata and one folder per submission."""
    export = root / "assignment_7_export"
    write_submission(export / "submission_101")
    second = write_submission(export / "submission_102")
    if flat_second:   # Grace uploaded the five modules without their folder
        for module in GRADED_MODULES:
            os.rename(second / "student" / module, second / module)
        for leftover in sorted((second / "student").rglob("*"), reverse=True):
            leftover.unlink() if leftover.is_file() else leftover.rmdir()
        (second / "student").rmdir()
    (export / "submission_metadata.yml").write_text(METADATA)
    return export


def zip_tree(folder, zip_path, arc_root):
    with zipfile.ZipFile(zip_path, "w") as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, f"{arc_root}/{path.relative_to(folder).as_posix()}")
    return zip_path


def people(found):
    return {s.name: (s.submission_id, [(p.name, p.sid, p.email) for p in s.submitters]) for s in found}


EXPECTED = {"Ada Lovelace & Alan Turing": ("101", [("Ada Lovelace", "0042", "ada@example.edu"),
                                                    ("Alan Turing", "0043", "alan@example.edu")]),
            "Grace Hopper": ("102", [("Grace Hopper", "0044", "grace@example.edu")])}


@pytest.mark.parametrize("given", ["export folder", "export zip"])
def test_an_export_named_by_the_grader_is_read_as_an_export(tmp_path, given):
    export = export_folder(tmp_path / "src")
    archive = zip_tree(export, tmp_path / "export.zip", "assignment_7_export")
    path = {"export folder": export, "export zip": archive}[given]
    found = submissions.discover([path], staging=str(tmp_path / "staging"), read_metadata=read_metadata)
    assert people(found) == EXPECTED
    for submission in found:
        assert (pathlib_of(submission.location) / "student" / "__init__.py").is_file()


@pytest.mark.parametrize("given", ["folder above the export", "folder with the zip"])
def test_inside_a_folder_of_submissions_an_export_is_one_submission(tmp_path, given):
    """Issue 31, class 1: what a folder of submissions holds is a submission each, whatever it looks like: a
    student's upload that holds a metadata file and folders named after classmates' submissions writes no row
    for them (here, the very same bytes as the export above, one level down)."""
    holder = tmp_path / "class"
    export = export_folder(holder)
    if given == "folder with the zip":
        zip_tree(export, holder / "upload.zip", "assignment_7_export")
        for path in sorted(export.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        export.rmdir()
    found = submissions.discover([holder], staging=str(tmp_path / "staging"), read_metadata=read_metadata)
    assert [(s.name, s.submission_id, s.submitters) for s in found] == [
        ("assignment_7_export" if given == "folder above the export" else "upload", "", ())]
    with pytest.raises(unpacking.SubmissionError, match="a grader names an export itself"):
        unpacking.unpack(found[0].location, str(tmp_path / "private"))


def test_with_no_exports_even_a_named_path_is_one_submission(tmp_path):
    """How the Gradescope harness grades an upload: a student's own metadata file beside student/ changes nothing
    (before, the upload was read as an export and the run failed)."""
    upload = write_submission(tmp_path / "upload")
    (upload / "submission_metadata.yml").write_text(METADATA)
    (upload / "submission_101").mkdir()
    read_as_export = submissions.discover([upload], staging=str(tmp_path / "staging"), read_metadata=read_metadata)
    assert "Ada Lovelace & Alan Turing" in [s.name for s in read_as_export]   # defence off: rows named by the upload
    found = submissions.discover([upload], exports=False)
    assert [(s.name, s.submitters) for s in found] == [("upload", ())]
    os.mkdir(tmp_path / "private")
    unpacking.unpack(found[0].location, str(tmp_path / "private"))
    assert (tmp_path / "private" / "student" / "__init__.py").is_file()


def test_in_a_folder_of_submissions_what_is_neither_a_file_nor_a_folder_is_never_a_row(tmp_path, monkeypatch):
    """A pipe, a socket or a link to nothing named after a classmate holds no submission (before, each was an
    error row, "not a file or folder", in the class table and grades.csv under the name it chose)."""
    import socket

    write_submission(tmp_path / "class" / "alice")
    os.mkfifo(tmp_path / "class" / "Victim Classmate")
    (tmp_path / "class" / "Dangling Classmate").symlink_to(tmp_path / "nowhere")
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(tmp_path / "class" / "Socket Classmate"))
        assert [s.name for s in submissions.discover([tmp_path / "class"])] == ["alice"]
        monkeypatch.setattr(submissions, "_file_or_folder", lambda _path: True)   # the defence off
        assert len(submissions.discover([tmp_path / "class"])) == 4


def pathlib_of(text):
    import pathlib
    return pathlib.Path(text)


def test_an_export_zips_submissions_keep_their_identity_across_runs(tmp_path):
    archive = zip_tree(export_folder(tmp_path / "src"), tmp_path / "export.zip", "assignment_7_export")
    first = submissions.discover([archive], staging=str(tmp_path / "one"), read_metadata=read_metadata)
    again = submissions.discover([archive], {s.slug: s.source for s in first}, staging=str(tmp_path / "two"),
                                 read_metadata=read_metadata)
    assert [(s.source, s.slug) for s in again] == [(s.source, s.slug) for s in first]
    real = os.path.realpath(archive)   # a digest of it: no folder of the grader's in a results file
    assert [s.source for s in first] == [submissions.identity(f"{real}::{os.path.basename(s.location)}") for s in first]
    assert len({s.location for s in first + again}) == 4   # read from each run's own extraction


def test_an_export_is_refused_by_the_runtimes_own_discovery_saying_which_command_reads_it(tmp_path):
    """The runtime that ships to Gradescope reads no export (PyYAML is the instructor's tools'): it says so."""
    export = export_folder(tmp_path / "src")
    with pytest.raises(unpacking.SubmissionError, match=r"is a Gradescope export: grade it with `python -m "
                                                          r"autograder grade`"):
        submissions.discover([export])


def test_two_export_zips_of_one_name_and_ruby_tagged_metadata_are_read(tmp_path):
    exports = []
    for course in ("a", "b"):
        export = export_folder(tmp_path / course)
        (export / "submission_metadata.yml").write_text(METADATA.replace(
            "submission_102:\n", "submission_102: !ruby/hash:ActiveSupport::HashWithIndifferentAccess\n"))
        (tmp_path / course / "zips").mkdir()
        exports.append(zip_tree(export, tmp_path / course / "zips" / "export.zip", "assignment_7_export"))
    found = submissions.discover(exports, staging=str(tmp_path / "staging"), read_metadata=read_metadata)
    assert len(found) == 4 and len({s.location for s in found}) == 4
    assert people(found[:2]) == EXPECTED


def test_an_export_zip_with_a_link_is_refused_whole(tmp_path):
    archive = zip_tree(export_folder(tmp_path / "src"), tmp_path / "export.zip", "assignment_7_export")
    with zipfile.ZipFile(archive, "a") as zf:
        link = zipfile.ZipInfo("assignment_7_export/submission_101/student/evil.py")
        link.external_attr = 0o120777 << 16
        zf.writestr(link, "/etc/shadow")
    with pytest.raises(unpacking.SubmissionError, match="links are not allowed"):
        submissions.discover([archive], staging=str(tmp_path / "staging"), read_metadata=read_metadata)


@pytest.mark.parametrize("inside_a_folder", [False, True])
def test_the_modules_uploaded_without_their_folder_are_graded_as_the_package(tmp_path, inside_a_folder):
    upload = tmp_path / "upload.zip"
    reference = write_submission(tmp_path / "reference") / "student"
    with zipfile.ZipFile(upload, "w") as zf:
        for module in [*GRADED_MODULES, "helpers.py"]:
            text = (reference / module).read_text() if module != "helpers.py" else "HELP = 1\n"
            zf.writestr(("my-work/" if inside_a_folder else "") + module, text)
        zf.writestr("attention.ipynb", "{}")
    private = tmp_path / "private"
    private.mkdir()
    unpacked = unpacking.unpack(str(upload), str(private))
    package = private / "student"
    assert (package / "__init__.py").read_text() == (STUDENT_DIR / "__init__.py").read_text()
    assert {p.name for p in package.iterdir()} == {"__init__.py", "helpers.py", *GRADED_MODULES}
    assert unpacked.note.startswith("graded heads.py, masking.py, multihead.py, padding.py, scaling.py")


def test_an_upload_with_no_graded_module_is_told_exactly_what_to_upload(tmp_path):
    upload = tmp_path / "upload.zip"
    with zipfile.ZipFile(upload, "w") as zf:
        zf.writestr("attention.ipynb", "{}")
        zf.writestr("notes.py", "x = 1\n")
    private = tmp_path / "private"
    private.mkdir()
    with pytest.raises(unpacking.SubmissionError) as raised:
        unpacking.unpack(str(upload), str(private))
    assert "upload the student/ folder itself" in str(raised.value)
    assert all(module in str(raised.value) for module in GRADED_MODULES)


def test_a_zip_declaring_too_many_entries_is_refused_before_its_directory_is_parsed(tmp_path, monkeypatch):
    """A central directory is parsed whole, one object per entry, by zipfile.ZipFile: the count it declares is
    checked first, so a zip of a few megabytes declaring millions of entries costs nothing to refuse."""
    upload = tmp_path / "many.zip"
    with zipfile.ZipFile(upload, "w") as archive:
        for index in range(unpacking.MAX_FILES + 1):
            archive.writestr(f"student/{index}.txt", "")

    def parsed(*_args, **_kwargs):
        raise AssertionError("the directory was parsed before its size was checked")

    monkeypatch.setattr(unpacking.zipfile, "ZipFile", parsed)
    with pytest.raises(unpacking.SubmissionError, match=r"too many files in the zip \(2001; the limit is 2000\)"):
        unpacking.unpack(str(upload), str(tmp_path / "private"))


def test_a_zip_whose_directory_is_larger_than_its_entries_can_be_is_refused(tmp_path):
    upload = tmp_path / "padded.zip"
    with zipfile.ZipFile(upload, "w") as archive:
        info = zipfile.ZipInfo("student/__init__.py")
        info.comment = b"x" * 65535   # the largest comment a directory entry can carry, many times over
        for index in range(100):
            info.filename = f"student/{index}.py"
            archive.writestr(info, "")
    with pytest.raises(unpacking.SubmissionError, match="the zip's directory is too large"):
        unpacking._check_directory(upload, max_files=100)


def test_the_graded_modules_are_read_from_the_handouts_package_file():
    assert unpacking.graded_modules() == set(GRADED_MODULES)


def row(name, score, status="graded", message="", submitters=(), submission_id=""):
    return Row.from_json({"submission": name, "slug": name, "score": score, "max_score": 100.0, "status": status,
                          "message": message, "submission_id": submission_id, "submitters": list(submitters),
                          **{f"part{p}": 0.0 for p in range(1, 7)}, "isolation": "isolated: pid", "flags": ""})


def test_the_csv_has_one_row_per_student_with_ids_and_the_group(tmp_path):
    group = [{"name": "Ada Lovelace", "sid": "0042", "email": "ada@example.edu"},
             {"name": "=HYPERLINK(\"x\")", "sid": "0043", "email": "alan@example.edu"}]
    gradebook.write_csv(tmp_path, [row("Ada Lovelace & =HYPERLINK(\"x\")", 87.5, submitters=group,
                                       submission_id="101"), row("bob", 100.0)])
    text = (tmp_path / "grades.csv").read_text(encoding="utf-8")
    lines = list(csv.DictReader(io.StringIO(text)))
    assert list(lines[0])[:5] == ["name", "sid", "email", "submission_id", "group"]
    assert [(r["name"], r["sid"], r["email"], r["submission_id"], r["score"]) for r in lines] == [
        ("Ada Lovelace", "0042", "ada@example.edu", "101", "87.5"),
        ("'=HYPERLINK(\"x\")", "0043", "alan@example.edu", "101", "87.5"),
        ("bob", "", "", "", "100.0")]
    assert lines[0]["group"] == lines[1]["group"] == 'Ada Lovelace & =HYPERLINK("x")' and lines[2]["group"] == ""


def test_each_row_names_its_results_file_whatever_letters_the_name_lost(tmp_path):
    named = dataclasses.replace(row("Zoë Ängström", 50.0), slug="Zo_Ngstr_m")   # the slug the submission's name became
    gradebook.write_csv(tmp_path, [named])
    [line] = csv.DictReader(io.StringIO((tmp_path / "grades.csv").read_text(encoding="utf-8")))
    assert (line["name"], line["results_file"]) == ("Zoë Ängström", "results/Zo_Ngstr_m.json")


def columns(line: str, width: int) -> str:
    """The start of line that fills `width` terminal columns."""
    for end in range(len(line) + 1):
        if gradebook.display_width(line[:end]) >= width:
            return line[:end]
    return line


def test_the_closing_table_is_aligned_and_keeps_where_the_error_is():
    message = ("SyntaxError: importing student failed: expected ':' after the function's signature and its "
               "arguments (scaling.py, line 12)")
    rows = [row("a", 100.0), row("Zoë Ängström-Ó'Brien of the very long surname", 12.3456),
            row("日本語の名前", 0.0, "error", message)]
    lines = gradebook.table(rows).splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("submission"))
    score_end = lines[header].index("score") + len("score")   # the header is plain ASCII
    body = lines[header + 1:]
    for line in body:   # the score column ends in the same terminal column on every row, whatever the name
        prefix = columns(line, score_end)
        assert float(prefix[-8:]) >= 0 and line[len(prefix)] == " ", body
    assert "(scaling.py, line 12)" in body[0] and "…" in body[0]   # the error row, listed first


@pytest.mark.slow
def test_an_export_zip_grades_each_student_and_a_class_of_errors_exits_1(tmp_path):
    archive = zip_tree(export_folder(tmp_path / "src", flat_second=True), tmp_path / "export.zip",
                       "assignment_7_export")
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(archive), "--out", str(tmp_path / "out"),
                           "--workers", "2"], cwd=REPO, capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = list(csv.DictReader((tmp_path / "out" / "grades.csv").open(encoding="utf-8")))
    assert [(r["name"], r["sid"], r["score"], r["status"]) for r in lines] == [
        ("Ada Lovelace", "0042", "100.0", "graded"), ("Alan Turing", "0043", "100.0", "graded"),
        ("Grace Hopper", "0044", "100.0", "graded")]
    assert "uploaded without their student/ folder" in lines[2]["message"]
    # Issue 49: the class reports read the export's submissions after the batch; its extraction must outlive it
    # (it was removed first: "0 submissions compared", and every extracted folder's mode "not put back").
    assert "similarity: 1 pair(s) of submissions to look at" in proc.stdout, proc.stdout[-2000:]
    assert "2 submissions compared" in (tmp_path / "out" / "similarity.html").read_text()
    assert "not put back" not in proc.stdout and "error: similarity" not in proc.stdout
    broken = tmp_path / "not-submissions"
    broken.mkdir()
    (broken / "readme.txt").write_text("the wrong folder")
    (broken / "data.zip").write_bytes(b"not a zip")
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(broken), "--out", str(tmp_path / "out2")],
                          cwd=REPO, capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode == 1 and "could be graded" in proc.stderr, proc.stderr[-2000:]
    assert len(list(csv.DictReader((tmp_path / "out2" / "grades.csv").open()))) == 2
