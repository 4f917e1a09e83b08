"""The gradebook row, typed once (grader/row.py): what a results file carries reads back as it was written, and
anything else is refused in one place, so a damaged results file is graded again instead of read."""
import dataclasses
import json

import pytest

from autograder import derived
from grader.paths import REPO
from grader.row import Row, RowError, Submitter, columns, described_columns, of_results
from grader.run import gradebook, submissions
from grader.run.outcome import Outcome
from grader.run.submissions import Submission

FULL = {"submission": "Ada & Alan", "status": "graded", "score": 87.5, "max_score": 100.0, "message": "",
        "part1": 10.0, "part2": 27.5, "submission_id": "101",
        "submitters": [{"name": "Ada", "sid": "0042", "email": "ada@example.edu"}],
        "gradescope_score": 87.5, "late": "", "late_penalty": 0.0, "grade": 87.5, "isolation": "isolated: pid",
        "flags": "", "peak_memory_mib": "",
        "slug": "Ada_Alan", "source": "/class/ada.zip", "seconds": 1.2, "engine_failure": False, "attempts": 1,
        "content": "unpacked-sha256:ab", "graded_with": "sha256:cd", "environment": "python 3.11.7; torch 2.13.0+cpu"}


def test_a_row_reads_back_as_it_was_written_flat_as_the_csv_is():
    row = Row.from_json(FULL)
    assert row.parts == {1: 10.0, 2: 27.5} and row.late is None and row.peak_memory_mib is None
    assert row.submitters == [Submitter("Ada", "0042", "ada@example.edu")] and row.gradescope_score == 87.5
    written = row.to_json()   # every field: FULL's as FULL has them, a field FULL omits at its default
    assert {key: written[key] for key in FULL} == FULL
    assert set(written) == set(Row(status="graded", parts=row.parts).to_json())
    assert Row.from_json(json.loads(json.dumps(written))) == row


def test_an_engine_row_goes_through_its_results_file_and_back(tmp_path):
    submission = Submission("ada", "ada", "/class/ada")
    outcome = Outcome("graded", score=42.0, part_scores={"1": 10.0, "2": 32.0}, peak_memory_bytes=3 << 20)
    row = gradebook.row_from_outcome(submission, outcome, "isolated: pid")
    (tmp_path / "results").mkdir()
    gradebook.write_result(tmp_path, row, gradebook.results_document(outcome, row))
    assert gradebook.read_row(tmp_path / "results" / "ada.json") == row
    assert row.part(1) == 10.0 and row.peak_memory_mib == 3.0 and row.gradescope_score is None
    assert row.grade == row.score == 42.0 and row.late_penalty == 0.0   # no late policy: the grade is the score


@pytest.mark.parametrize("change", [
    {"status": "passed"},                  # not a status of the gradebook
    {"score": "100"},                      # a number written as text
    {"part3": "full"},
    {"engine_failure": "no"},
    {"attempts": 1.5},
    {"submitters": [{"name": "Ada", "grade": "A"}]},
    {"submitters": "Ada"},
    {"late": "yesterday"},
    {"is_admin": True},                    # a field no row has
])
def test_anything_but_a_row_is_refused(change):
    with pytest.raises(RowError):
        Row.from_json({**FULL, **change})


def test_a_row_needs_a_status_and_an_object():
    without = {key: value for key, value in FULL.items() if key != "status"}
    for wrong in (without, [FULL], "graded", None):
        with pytest.raises(RowError):
            Row.from_json(wrong)
    assert of_results({"extra_data": {"gradebook_row": without}}) is None
    assert of_results({"score": 1.0}) is None and of_results(None) is None


def test_a_results_file_with_a_damaged_row_is_graded_again_not_read(tmp_path):
    """load_done counts a submission as graded only when its results file's row reads back whole."""
    (tmp_path / "results").mkdir()
    for slug, row in (("good", {**FULL, "slug": "good", "source": "/class/good"}),
                      ("bad", {**FULL, "slug": "bad", "source": "/class/bad", "score": "100"})):
        document = {"score": 0.0, "tests": [], "extra_data": {"gradebook_row": row}}
        (tmp_path / "results" / f"{slug}.json").write_text(json.dumps(document))
    done, taken = gradebook.load_done(tmp_path)
    assert list(done) == [submissions.identity("/class/good")] and list(taken) == ["good"]


def test_a_row_an_earlier_version_wrote_keeps_its_submission_under_todays_identity():
    """Earlier versions kept the path itself (or "bytes:" and its hex where it was not UTF-8) as the identity."""
    odd = "/class/caf\udce9"   # a folder name that is not UTF-8, as os.fsdecode gives it
    assert submissions.identity_of_earlier("/class/ada") == submissions.identity("/class/ada")
    assert submissions.identity_of_earlier("bytes:" + b"/class/caf\xe9".hex()) == submissions.identity(odd)
    assert submissions.identity_of_earlier(submissions.identity(odd)) == submissions.identity(odd)


def test_the_gradebook_columns_are_the_rows_fields_and_the_guide_describes_each():
    """One home: grades.csv's header follows Row's fields (a roster import keys on its first columns), and
    docs/graders.md's table of columns is generated from the same fields (a stale table is test_spec's to refuse)."""
    header = columns()
    assert header[:7] == ["name", "sid", "email", "submission_id", "group", "submission", "score"]
    assert {"source", "slug", "content", "graded_with", "attempts"}.isdisjoint(header)   # bookkeeping, no column
    described = [cell for cells, meaning in described_columns() for cell in cells if meaning]
    assert described == header
    assert derived.columns_table() in (REPO / "docs" / "graders.md").read_text()


def test_a_row_is_built_whole_and_never_changed():
    row = Row.from_json(FULL)
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.score = 100.0
    assert dataclasses.replace(row, score=100.0).score == 100.0 and row.score == 87.5
