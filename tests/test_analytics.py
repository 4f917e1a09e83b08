"""What the class got wrong (tests.csv, tests.png, the closing table), from the results the engine wrote."""
from __future__ import annotations

import csv
import dataclasses
import json
import shutil

from autograder.reports import analytics, chart, summary
from grader.row import Row
from grader.run import gradebook
from grader.scoring import tags

HINT = "Hint: matches q @ k^T without scaling: did you multiply by 1/sqrt(E)?"


def entry_name(part: int, name: str) -> str:
    return f"Part {part} (Title {part}): {name}"


def part_of(test: str) -> int:
    return 2 if test == "lone" else 1


def write_class(out, verdicts: dict[str, tuple[str, dict[str, str | None]]]) -> list[Row]:
    """verdicts: submission -> (status, {test id -> None if passed, else its failure message}), all in Part 1 but
    `lone`, in Part 2 (as Part 5 repeats Part 2's test names). Writes results/<slug>.json; returns the rows."""
    (out / "results").mkdir(parents=True)
    rows = []
    for slug, (status, tests) in verdicts.items():
        entries = [{"name": entry_name(part_of(test), test), "tags": tags(part_of(test), test), "max_score": 2.0,
                    "score": 2.0 if message is None else 0.0, "status": "passed" if message is None else "failed",
                    "output": message or "Passed."} for test, message in tests.items()]
        entries.append({"name": "Not run on this grader (worth 0 points)", "output": "- CUDA"})
        (out / "results" / f"{slug}.json").write_text(json.dumps({"tests": entries}))
        rows.append(Row(status=status, submission=slug, slug=slug, parts=dict.fromkeys(range(1, 7), 0.0)))
    return rows


def test_each_test_counts_who_passed_what_the_class_lost_and_why_grouped_by_hint(tmp_path):
    rows = write_class(tmp_path, {
        "a": ("graded", {"t_values[2d]": f"wrong at 3 of 4 entries, first at (0, 1). {HINT}", "lone": None}),
        "b": ("graded", {"t_values[2d]": f"wrong at 9 of 9 entries, first at (2, 2). {HINT}", "lone": None}),
        "c": ("timeout", {"t_values[2d]": "f(tensor(2, 3) float32) raised Timeout: 10 s", "lone": "x"}),
        "d": ("graded", {"t_values[2d]": None, "lone": None}),
        "e": ("error", {"t_values[2d]": "never ran", "lone": "never ran"}),   # no evidence: left out
    })
    values, lone = analytics.class_tests(tmp_path, rows)
    assert (values.part, values.test, values.function, values.graded, values.passed) == (1, "t_values[2d]", "t_values",
                                                                                         4, 1)
    assert values.points_lost == 6.0 and values.pass_rate == 25.0
    assert values.reasons.most_common() == [(HINT, 2), ("f(tensor(#, #) float32) raised Timeout: # s", 1)]
    assert (lone.part, lone.graded, lone.passed) == (2, 4, 3)
    analytics.write(tmp_path, rows)
    table = list(csv.DictReader((tmp_path / "tests.csv").open()))
    assert [(r["part"], r["test"], r["pass_rate"]) for r in table] == [("1", "t_values[2d]", "25.0"),
                                                                       ("2", "lone", "75.0")]
    assert table[0]["top_failures"].startswith(f"{HINT} (2); ")
    assert (tmp_path / "tests.png").read_bytes().startswith(b"\x89PNG")


def test_the_pictures_title_counts_no_more_submissions_than_its_bars(tmp_path, monkeypatch):
    rows = write_class(tmp_path, {"a": ("graded", {"t_values[2d]": None}), "b": ("graded", {"t_values[2d]": "no"}),
                                  "lost": ("graded", {"t_values[2d]": None})})
    (tmp_path / "results" / "lost.json").unlink()   # a row without its results file: no evidence about any test
    titles = []
    monkeypatch.setattr(chart, "draw_tests", lambda bars, title: titles.append((bars, title)) or b"")
    analytics.write(tmp_path, rows)
    [(bars, title)] = titles
    assert bars == [(1, "t_values", 50.0, 2)] and "(2 submissions with test results)" in title


def test_the_picture_groups_by_part_and_puts_the_weakest_test_first():
    stats = [analytics.TestStat(1, "t_easy", 1.0, 4, 4), analytics.TestStat(1, "t_hard[a]", 1.0, 4, 1),
             analytics.TestStat(1, "t_hard[b]", 1.0, 4, 2), analytics.TestStat(2, "t_other", 1.0, 4, 0)]
    assert analytics.by_function(stats) == [(1, "t_hard", 37.5, 4), (1, "t_easy", 100.0, 4), (2, "t_other", 0.0, 4)]


def test_the_closing_table_names_the_most_failed_tests_and_lists_errors_and_timeouts_first(tmp_path):
    rows = write_class(tmp_path, {name: ("graded", {"t_values[2d]": None if name < "m" else "wrong"})
                                  for name in [f"s{index:02d}" for index in range(30)]})
    rows += [dataclasses.replace(rows[0], slug=name, submission=name, status=status, message=message)
             for name, status, message in (("zz-error", "error", "SyntaxError"), ("zz-timeout", "timeout", "spun"))]
    stats = analytics.class_tests(tmp_path, rows)
    text = gradebook.table(rows, limit=5, most_failed=analytics.most_failed(stats))
    assert "most failed tests" in text and "Part 1 t_values " in text and "failed by 30 of 30" in text
    shown = [line.split()[0] for line in text.splitlines()[text.splitlines().index(
        next(line for line in text.splitlines() if line.startswith("submission"))) + 1:] if line.strip()]
    assert shown[:2] == ["zz-error", "zz-timeout"]


def test_the_most_failed_tests_count_a_parametrized_tests_cases_once_as_tests_png_does(tmp_path):
    """Issue 49: five cases of one parametrized test took all five lines of "most failed tests" (tests.png draws
    them as one bar). A submission that fails any case counts once."""
    cases = [f"t_values[{n}d]" for n in range(1, 6)]
    rows = write_class(tmp_path, {
        "a": ("graded", dict.fromkeys(cases, "wrong") | {"t_other": "wrong"}),
        "b": ("graded", {**dict.fromkeys(cases), "t_values[1d]": "wrong", "t_other": None}),
        "c": ("graded", {**dict.fromkeys(cases), "t_other": None})})
    listed = analytics.most_failed(analytics.class_tests(tmp_path, rows))
    assert [(s.part, s.test, s.failed, s.graded) for s in listed] == [(1, "t_values (5 cases)", 2, 3),
                                                                      (1, "t_other", 1, 3)]
    assert "t_values (5 cases)" in gradebook.table(rows, most_failed=listed)


def test_a_failure_reason_keeps_part_numbers_and_is_cut_between_words():
    """Issue 49: "Part 3" read "Part #" (the place to look, the same in every submission, is no number to hide),
    and a long reason was cut mid-word."""
    assert analytics.reason("Part 3 (Heads) calls scaling.py: wrong at 3 of 4 entries. More") == (
        "Part 3 (Heads) calls scaling.py: wrong at # of # entries")
    long = analytics.reason("Hint: " + "the weights " * 30)
    assert len(long) <= analytics.REASON_CHARS and long.endswith(("the…", "weights…"))


def test_summary_png_does_not_count_error_rows_as_zeros(tmp_path, monkeypatch):
    drawn = {}
    monkeypatch.setattr(chart, "draw", lambda scores, title, *rest: drawn.update(scores=scores, title=title) or b"")
    rows = [Row(status=status, score=score, parts=dict.fromkeys(range(1, 7), 0.0))
            for status, score in (("graded", 90.0), ("timeout", 40.0), ("error", 0.0))]
    summary.write(tmp_path, rows)
    assert drawn["scores"] == [90.0, 40.0] and "1 error not counted" in drawn["title"]


def test_on_the_graded_zoo_every_test_is_listed_and_every_bug_shows_in_its_part(graded_zoo, tmp_path):
    out = tmp_path   # the reports are made from the batch's output folder, after it (here a copy of its results)
    shutil.copytree(graded_zoo.out / "grades" / "results", out / "results")
    analytics.write(out, list(gradebook.load_done(graded_zoo.out / "grades")[0].values()))
    table = list(csv.DictReader((out / "tests.csv").open()))
    correct = sum(case.kind in ("reference", "variant") for case in graded_zoo.cases.values())
    assert table and all(int(row["passed"]) >= correct for row in table), "a correct submission failed a test"
    failing_parts = {int(row["part"]) for row in table if int(row["passed"]) < int(row["graded"])}
    assert {case.part for case in graded_zoo.cases.values() if case.kind == "bug"} <= failing_parts
    assert any(HINT in row["top_failures"] for row in table if row["part"] == "1")   # the zoo's no-scale bug
    assert (out / "tests.png").read_bytes().startswith(b"\x89PNG")


def test_the_runtimes_batch_writes_results_and_grades_and_no_class_report(graded_zoo):
    """The self-check grades with the engine shipped in autograder.zip, as Gradescope's run does: it writes the
    results and grades.csv and stops; the class reports are the instructor's command's (tests/test_regrade.py
    reads a similarity report it wrote)."""
    out = graded_zoo.out / "grades"
    assert (out / "grades.csv").is_file() and any((out / "results").glob("*.json"))
    assert not [name for name in ("tests.csv", "tests.png", "summary.png", "similarity.csv", "similarity.html",
                                  "gradescope.csv") if (out / name).exists()]


def test_no_file_of_a_run_names_where_the_grader_keeps_the_submissions(graded_zoo):
    """A results file goes back to its student: it names no folder of the grader's machine (a submission's identity
    across runs is a digest of where it was read from)."""
    out, submissions = graded_zoo.out / "grades", str(graded_zoo.out / "submissions")
    written = [path for path in out.rglob("*") if path.is_file()]
    assert written and not [path.name for path in written if submissions in path.read_text(errors="replace")]
