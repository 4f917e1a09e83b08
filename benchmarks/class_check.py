"""The batch command's instructor files checked on a generated class, with the times they took.

    python benchmarks/class_check.py [--size 200] [--workers 2] [--work DIR]

Builds a class (tests/cohort: every zoo bug and variant, the independent hands, disguised copies) as a
Gradescope export, then, as a grader runs them:
1. grade it with --repeat 2: every bug loses points in its part and every correct member scores 100
   (grades.csv), tests.csv counts the same failures, every disguised copy is flagged with its original and no
   two members of different origins are flagged (similarity.csv), the two gradings agree (repeat.csv);
2. the export's metadata gains Gradescope's scores (three of them wrong on purpose) and submission times
   (three late): the same command again lists exactly those three in gradescope.csv, and the late column
   holds the planted hours;
   The course then sets a 10%-per-day late policy: the same command grades nothing and `grade` is each late
   row's score less 10% per started day, every other row's score;
   2c. three students upload members of the class (bugs, then correct ones) for a week at irregular times, played
   through Gradescope's harness with an autograder.zip built with a budget of 3 in any 24 hours
   (class_budget.py): no 24 hours count more than 3; a counted upload scores what step 1 gave its member; one
   over the budget keeps the last counted score, shows no test and names the first minute one counts again
   (worked out from the times alone); one at the moment a slot reopens counts; a student within the budget
   reads what they would without it;
3. one hidden test is changed (a copy of the repository, the lesson's causal weights mistyped) and the class
   is graded with --regrade: changes.csv lists exactly the submissions that passed that test, each with that
   test's flip and nothing else.
Prints each step's time and exits 1 with what disagreed if any check fails.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import math
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks import class_budget  # noqa: E402
from grader.run import changes, gradebook  # noqa: E402
from grader.scoring import PART_POINTS  # noqa: E402
from tests import cohort  # noqa: E402

DUE = "2026-11-20T23:59:00+00:00"
CHANGED_TEST = "grading_tests/test_part2_masking.py"
CHANGED_FROM, CHANGED_TO = "[[1, 0], [0.1503, 0.8497]]", "[[1, 0], [0.1497, 0.8503]]"
CHANGED_NAME = "test_lesson_causal_attention"


def as_export(members: list[cohort.Member], folder: pathlib.Path, export: pathlib.Path) -> dict[str, str]:
    """The class as Gradescope exports it (submission_<id> folders, metadata naming each student); member
    student -> its folder name."""
    export.mkdir(parents=True)
    ids = {}
    for number, member in enumerate(members, 1001):
        ids[member.student] = f"submission_{number}"
        (folder / member.student).rename(export / ids[member.student])
    write_metadata(members, ids, export, {}, {})
    return ids


def write_metadata(members, ids, export: pathlib.Path, scores: dict[str, float], times: dict[str, str]) -> None:
    lines = []
    for member in members:
        lines += [f"{ids[member.student]}:", "  :submitters:", f"  - :name: {member.student}",
                  f"    :sid: '{member.student[-3:]}'", f"    :email: {member.student}@example.edu"]
        if member.student in times:
            lines.append(f"  :created_at: {times[member.student]}")
        if member.student in scores:
            lines.append(f"  :score: {scores[member.student]}")
    (export / "submission_metadata.yml").write_text("\n".join(lines) + "\n")


def grade(repo: pathlib.Path, export: pathlib.Path, out: pathlib.Path, workers: int, *extra) -> float:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(export), "--out", str(out),
                           "--workers", str(workers), *extra], cwd=repo, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"grading failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    print("\n".join("    " + line for line in proc.stdout.splitlines() if line.startswith(
        ("similarity:", "gradescope:", "regrade:", "repeat:", "warning:"))))
    return time.monotonic() - start


def table(path: pathlib.Path) -> list[dict]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


def check_grades(members, out: pathlib.Path, problems: list[str]) -> None:
    rows = {row["name"]: row for row in table(out / "grades.csv")}
    for member in members:
        row = rows[member.student]
        if member.part is None and float(row["score"]) != 100.0:
            problems.append(f"{member.student} ({member.kind} {member.sample}) is correct but scored {row['score']}")
        if member.part is not None and float(row[f"part{member.part}"]) >= PART_POINTS[member.part]:
            problems.append(f"{member.student} ({member.kind} {member.sample}) lost nothing in its part {member.part}")
    failing_by_part = {part: sum(float(row[f"part{part}"]) < PART_POINTS[part] for row in rows.values())
                       for part in PART_POINTS}
    tests = table(out / "tests.csv")
    for part in PART_POINTS:
        worst = max((int(t["graded"]) - int(t["passed"]) for t in tests if int(t["part"]) == part), default=0)
        if worst > failing_by_part[part] or (failing_by_part[part] and not worst):
            problems.append(f"tests.csv: part {part}'s most failed test fails {worst}, grades.csv has "
                            f"{failing_by_part[part]} losing points there")
    print(f"  grades: {sum(m.part is None for m in members)} correct members at 100, "
          f"{sum(m.part is not None for m in members)} bugs losing points in their part; per part losing: "
          f"{failing_by_part}")


def check_similarity(members, out: pathlib.Path, problems: list[str]) -> None:
    origin = {m.student: m.origin for m in members}
    flagged = {frozenset((row["first"], row["second"])) for row in table(out / "similarity.csv")}
    copies = [m for m in members if m.copy_of]
    missed = [m for m in copies if frozenset((m.student, m.copy_of)) not in flagged]
    false = [tuple(pair) for pair in flagged if len({origin[name] for name in pair}) > 1]
    hands = [m.student for m in members if m.kind == "hand"]
    hand_pairs = [pair for pair in flagged if pair <= set(hands)]
    problems += [f"similarity: the copy {m.student} of {m.copy_of} ({m.sample}) was not flagged" for m in missed]
    problems += [f"similarity: {a} and {b} are flagged across origins ({origin[a]}, {origin[b]})" for a, b in false]
    problems += [f"similarity: independent hands flagged together: {sorted(pair)}" for pair in hand_pairs]
    print(f"  similarity: {len(flagged)} pairs flagged; {len(copies) - len(missed)} of {len(copies)} copies found; "
          f"{len(false)} pairs across origins; {len(hands)} independent hands, {len(hand_pairs)} pairs among them")


def check_late_policy(repo: pathlib.Path, export: pathlib.Path, out: pathlib.Path, workers: int,
                      scores: dict[str, float], late_hours: dict[str, float], problems: list[str]) -> None:
    """2b. The course sets a 10%-per-day late policy (its copy's assignment.toml) and runs the same command again:
    it grades nothing (a policy changes no score), and `grade` is each planted late row's score less 10% per started
    day late, every other row's score."""
    spec = repo / "assignment" / "assignment.toml"
    spec.write_text(spec.read_text().replace("\n[settings]\n", '\n[settings]\nlate_policy = "per_day"\n'
                                                                  "late_deduction = 10.0\n"))
    took = grade(repo, export, out, workers, "--due", DUE)
    rows = {row["name"]: row for row in table(out / "grades.csv")}
    off = []
    for name, score in scores.items():
        days = math.ceil(late_hours[name] / 24) if name in late_hours else 0
        expected = score * (1 - min(10.0 * days, 100.0) / 100)
        if abs(float(rows[name]["grade"]) - expected) > 1e-3 or float(rows[name]["score"]) != score:
            off.append(f"{name}: score {rows[name]['score']}, grade {rows[name]['grade']}, expected {expected:g}")
    problems += [f"late policy: {line}" for line in off]
    print(f"2b. the same command with a 10%-per-day late policy: {took:.1f} s; {len(off)} rows off "
          f"({len(late_hours)} late: their grade {', '.join(rows[n]['grade'] for n in sorted(late_hours))})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--work", default=None, help="folder to work in (default: a temporary one, removed)")
    args = parser.parse_args(argv)
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="class-check-"))
    shutil.rmtree(work, ignore_errors=True)
    problems: list[str] = []
    start = time.monotonic()
    members = cohort.build(work / "class", size=args.size)
    export, out = work / "export", work / "out"
    ids = as_export(members, work / "class", export)
    print(f"class of {len(members)}: " + ", ".join(f"{k}: {sum(m.kind == k for m in members)}"
                                                    for k in ("bug", "variant", "hand", "copy"))
          + f" (built in {time.monotonic() - start:.1f} s)")

    print(f"1. grade --repeat 2: {grade(REPO, export, out, args.workers, '--repeat', '2'):.0f} s")
    check_grades(members, out, problems)
    check_similarity(members, out, problems)
    repeats = table(out / "repeat.csv")
    problems += [f"repeat: {row['submission']} differed: {row['flips']}" for row in repeats]
    print(f"  repeat: {len(repeats)} submissions differed between the two gradings")

    scores = {row["name"]: float(row["score"]) for row in table(out / "grades.csv")}
    wrong = sorted(scores)[:3]
    recorded = {name: score + (5.0 if name in wrong else 0.0) for name, score in scores.items()}
    due = datetime.datetime.fromisoformat(DUE)
    late_hours = {name: hours for name, hours in zip(sorted(scores)[-3:], (1.5, 26.0, 0.25), strict=True)}
    times = {name: str(due + datetime.timedelta(hours=late_hours.get(name, -2.0))) for name in scores}
    write_metadata(members, ids, export, recorded, times)
    print(f"2. grade again with Gradescope's scores and times, --due: "
          f"{grade(REPO, export, out, args.workers, '--due', DUE):.1f} s")
    listed = {row["submission"] for row in table(out / "gradescope.csv")}
    if listed != set(wrong):
        problems.append(f"gradescope.csv lists {sorted(listed)}, the planted disagreements are {wrong}")
    late = {row["name"]: row["late"] for row in table(out / "grades.csv")}
    wrong_late = {n: late[n] for n in scores if float(late[n] or "nan") != late_hours.get(n, 0.0)}
    problems += [f"late column of {name}: {value!r}, planted {late_hours.get(name, 0.0)}" for name, value in
                 wrong_late.items()]
    print(f"  gradescope.csv: {len(listed)} disagreements (planted {len(wrong)}); late: "
          f"{sum(float(v) > 0 for v in late.values())} late rows (planted {len(late_hours)})")

    slugs = {gradebook.read_row(path).submission: path.stem for path in (out / "results").glob("*.json")}
    passed_before = {name for name in scores
                     if any(CHANGED_NAME in test and verdict == "passed"
                            for test, verdict in changes.verdicts(out / "results", slugs[name]).items())}
    repo = work / "repository"   # the working tree as it is (tracked files and new ones): a course's own copy
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        if (REPO / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, repo / name)
    check_late_policy(repo, export, out, args.workers, scores, late_hours, problems)
    problems += class_budget.week(members, {name: export / folder for name, folder in ids.items()}, scores,
                                  work / "budget")

    test_file = repo / CHANGED_TEST   # now one hidden test changed
    text = test_file.read_text()
    assert text.count(CHANGED_FROM) == 1, f"{CHANGED_TEST} no longer holds {CHANGED_FROM}"
    test_file.write_text(text.replace(CHANGED_FROM, CHANGED_TO))
    print(f"3. grade --regrade after changing {CHANGED_NAME}: "
          f"{grade(repo, export, out, args.workers, '--regrade', '--due', DUE):.0f} s")
    changed = table(out / "changes.csv")
    other = [row for row in changed if any(CHANGED_NAME not in flip for flip in row["flips"].split("; "))]
    problems += [f"changes.csv: {row['submission']} flipped other tests: {row['flips']}" for row in other]
    listed = {row["submission"] for row in changed}
    if listed != passed_before:
        problems.append(f"changes.csv lists {len(listed)} submissions; {len(passed_before)} passed the changed test "
                        f"before (missing {sorted(passed_before - listed)[:5]}, "
                        f"extra {sorted(listed - passed_before)[:5]})")
    print(f"  changes.csv: {len(changed)} submissions changed ({len(passed_before)} passed the changed test before); "
          f"{len(other)} with another test flipped")
    print(f"total {time.monotonic() - start:.0f} s; work folder {work}")
    for problem in problems:
        print("PROBLEM:", problem)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
