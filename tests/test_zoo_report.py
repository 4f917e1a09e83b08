"""python -m autograder zoo-report: the blast radius of every zoo bug, from results.json documents."""
import subprocess
import sys

import pytest

from autograder import selfcheck, zoo_report
from autograder.zoo.bugs import BUGS
from grader.paths import REPO
from grader.scoring import TestOutcome, gradescope_results, score_outcomes
from tests.patience import SAFETY_NET_S


def results(*failing):
    """A results.json in which the tests of the given parts fail (one test per part passes)."""
    tests = [TestOutcome(f"test_ok_{part}", part, 1, "passed") for part in range(1, 7)]
    tests += [TestOutcome(f"test_bad_{part}", part, 1, "failed") for part in failing]
    return gradescope_results(score_outcomes(tests))


def test_a_bug_that_costs_only_its_part():
    radius = zoo_report.radius("x", 3, results(3))
    assert radius.own_lost == 5 and radius.outside_lost == {} and radius.failed == 1 and radius.ok


def test_a_cascade_into_the_parts_that_use_it_is_fine_when_the_root_is_named():
    radius = zoo_report.radius("x", 3, results(3, 5, 6))
    assert radius.outside_lost == {5: 12.5, 6: 7.5} and radius.stray_parts == [] and radius.root_named and radius.ok


def test_a_loss_in_a_part_that_does_not_use_the_bugs_part_is_a_stray():
    radius = zoo_report.radius("x", 3, results(3, 4))
    assert radius.stray_parts == [4] and not radius.ok
    assert "STRAY" in zoo_report.render([radius])


def test_a_bug_that_costs_nothing_in_its_part_is_flagged():
    radius = zoo_report.radius("x", 2, results(5))
    assert radius.own_lost == 0 and not radius.ok
    assert "NOTHING LOST IN ITS PART" in zoo_report.render([radius])


def test_a_cascade_whose_feedback_does_not_name_the_root_is_flagged():
    document = results(3, 5)
    document["output"] = document["output"].split("\n\n")[0]   # the cascade note removed
    radius = zoo_report.radius("x", 3, document)
    assert not radius.root_named and not radius.ok


def test_the_table_by_part_gives_each_parts_bugs_their_medians_ranges_cascades_and_scores():
    found = [zoo_report.radius("a", 3, results(3)), zoo_report.radius("b", 3, results(3, 5, 6)),
             zoo_report.radius("c", 4, results(4))]
    rows = {line.split(" | ")[0].strip("| "): line for line in zoo_report.by_part(found).splitlines()[2:]}
    assert set(rows) == {"3", "4"}
    assert rows["3"] == "| 3 | 2 | 2 (1 to 3) | 5 (5 to 5) of 10 | 1 | 75.00, 95.00 |", rows["3"]
    assert rows["4"].startswith("| 4 | 1 | 1 (1 to 1) | ") and "| 0 |" in rows["4"]


@pytest.mark.slow
def test_every_bug_of_the_graded_zoo_costs_its_part_and_only_the_parts_that_use_it(graded_zoo):
    found = zoo_report.radii(list(graded_zoo.cases.values()), graded_zoo.results)
    assert len(found) == len(BUGS)
    assert [r.name for r in found if not r.ok] == [], zoo_report.render([r for r in found if not r.ok])


@pytest.mark.slow
def test_the_command_grades_a_bug_through_the_engine_and_prints_its_row(dist, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "autograder", "zoo-report", "--dist", str(dist), "--out",
                           str(tmp_path), "--bug", "merge-without-transpose", "--bug", "fill-minus-1e9"],
                          cwd=REPO, capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "| merge-without-transpose | 3 |" in proc.stdout and "| fill-minus-1e9 | 2 |" in proc.stdout
    assert "2 bugs: every one loses points in its own part: yes" in proc.stdout


def test_the_command_refuses_an_unknown_bug(capsys):
    with pytest.raises(SystemExit):
        zoo_report.main(["--bug", "no-such-bug"])
    assert "no such bug in the zoo" in capsys.readouterr().err


def test_the_zoo_report_judges_the_same_cases_as_the_selfcheck():
    assert {c.name for c in selfcheck.trials() if c.kind == "bug"} == {f"bug-{b.name}" for b in BUGS}
