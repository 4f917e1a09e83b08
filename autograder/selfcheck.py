"""python -m autograder selfcheck [--out DIR] [--quick] [--workers N]

First finds what an instructor may have got wrong (autograder/consistency.py: the spec, the derived files,
the reference against the spec, the hidden suite against the spec) and stops there, naming each file to
fix. Then builds everything (as `python -m autograder build`) and checks what students receive and the
grader end to end. All submissions are graded in one batch by the engine shipped in dist/autograder.zip
(unpacked, so the artefact itself is what is checked), and each must meet its expectation:

    the handout            holds nothing hidden (autograder.otter.leaks), and neither it nor the student
                           notebook names a part the spec does not declare
    the public checks      of the unpacked handout: every one fails on the stubs, passes on the reference
    reference              scores 100 (else: which tests fail, why, and the files to look at)
    stubs                  score 0
    every bug of the zoo   loses points in its own part (autograder/zoo/bugs.py; bugs of parts the spec
                           does not declare are left out)
    every correct variant  scores 100 (autograder/zoo/variants.py)
    the adversarial zoo    each hostile submission graded as autograder/adversarial expects
                           (when this checkout has it; this checkout's engine, its own batch)

Prints one line per check and exits with status 1 when any fails. --quick grades the reference,
the stubs, the first bug of each part and the first variant only (no adversarial zoo).
--dist DIR checks the artefacts of an earlier `python -m autograder build --out DIR` (the very
autograder.zip you are about to upload) instead of building new ones.
"""
from __future__ import annotations

import argparse
import importlib
import json
import pathlib
import shutil
import sys
import time
import zipfile
from dataclasses import dataclass

from assignment.spec import SPEC
from autograder import build_cli, consistency, handout_check
from autograder.otter import leaks, packaging
from autograder.samples import write_submission
from autograder.zoo import fresh
from autograder.zoo.bugs import BUGS
from autograder.zoo.variants import VARIANTS
from grader.gradescope import engine_bridge
from grader.paths import REPO
from grader.row import of_results
from grader.scoring import PART_POINTS, entry_part, entry_test

DEFAULT_OUT = REPO / "out" / "selfcheck"
# The sub-folders of --out this command owns (and empties first, so no stale result is reused).
OWNED = ("dist", "autograder-source", "submissions", "grades", "adversarial", "adversarial-markers",
         "adversarial-grades", "handout")
FULL_MARKS = 100.0


@dataclass(frozen=True)
class Trial:
    """One submission to grade and what it must score."""
    name: str               # its folder name, also its name in the gradebook
    kind: str               # "reference", "stubs", "bug" or "variant"
    overrides: dict | None  # student/ file -> text on top of the reference; None: the untouched stubs
    part: int | None = None  # the part a bug lives in


@dataclass(frozen=True)
class Verdict:
    name: str
    kind: str
    expected: str
    got: str
    ok: bool


def trials(quick: bool = False) -> list[Trial]:
    bugs, variants = [bug for bug in fresh(BUGS) if bug.part in SPEC.numbers], fresh(VARIANTS)
    if quick:
        first_per_part = {}
        for bug in bugs:
            first_per_part.setdefault(bug.part, bug)
        bugs, variants = list(first_per_part.values()), variants[:1]
    return ([Trial("reference", "reference", {}), Trial("stubs", "stubs", None)]
            + [Trial(f"bug-{b.name}", "bug", b.overrides, b.part) for b in bugs]
            + [Trial(f"variant-{v.name}", "variant", v.overrides) for v in variants])


def judge(trial: Trial, results: dict | None) -> Verdict:
    """Compare one graded submission with what its kind must score."""
    if results is None:
        return Verdict(trial.name, trial.kind, "a result", "none written", False)
    row, score = of_results(results), float(results.get("score", 0.0))
    if row is None or row.status != "graded":
        got = "no gradebook row" if row is None else f"{row.status}: {row.message}"
        return Verdict(trial.name, trial.kind, "graded", got, False)
    if trial.kind in ("reference", "variant"):
        got = f"{score:g}" + ("" if score == FULL_MARKS else f"; {failures(results)}")
        return Verdict(trial.name, trial.kind, "100", got, score == FULL_MARKS)
    if trial.kind == "stubs":
        return Verdict(trial.name, trial.kind, "0", f"{score:g}", score == 0.0)
    # A bug must cost points in the part it lives in, not merely somewhere (a missing column: not lost).
    most = float(PART_POINTS[trial.part])
    got = row.parts.get(trial.part, most)
    ok = got < most and score < FULL_MARKS
    return Verdict(trial.name, trial.kind, f"part {trial.part} < {most:g}",
                   f"part {trial.part}: {got:g}; total {score:g}", ok)


def failures(results: dict, shown: int = 3) -> str:
    """The tests a submission failed, with their messages and the files to look at."""
    failed = [test for test in results.get("tests", []) if test.get("status") == "failed"]
    lines = []
    for test in failed[:shown]:
        name, number = entry_test(test) or test.get("name", "?"), entry_part(test)
        part = "?" if number is None else str(number)
        module = SPEC.part(number).module if number in SPEC.numbers else "?"
        lines.append(f"{name} failed ({test.get('output', '')[:160]}): look at grading_tests/test_part{part}_*.py "
                     f"and assignment/reference/{module}.py")
    more = f"; and {len(failed) - shown} more" if len(failed) > shown else ""
    return "; ".join(lines) + more


def check_handout(handout: pathlib.Path) -> Verdict:
    findings = leaks.find_leaks(handout)
    got = "clean" if not findings else f"{len(findings)} leak(s): " + "; ".join(findings[:3])
    return Verdict(handout.name, "handout", "clean", got, not findings)


def write_trials(chosen: list[Trial], folder: pathlib.Path) -> None:
    for trial in chosen:
        write_submission(folder / trial.name, solution=trial.overrides is not None, overrides=trial.overrides or {})


def read_results(grades: pathlib.Path) -> dict[str, dict]:
    """Submission name -> its results.json, from the batch command's output folder."""
    found = {}
    for path in sorted((grades / "results").glob("*.json")):
        document = json.loads(path.read_text())
        row = of_results(document)
        if row is not None:
            found[row.submission] = document
    return found


def grade(chosen: list[Trial], autograder_zip: pathlib.Path, out: pathlib.Path, workers: int,
          env: dict | None = None) -> dict[str, dict]:
    """Write the submissions and grade them in one batch with the engine unpacked from autograder_zip;
    returns trial name -> its results.json (a trial the engine wrote nothing for is absent)."""
    source = out / "autograder-source"
    with zipfile.ZipFile(autograder_zip) as zf:
        zf.extractall(source)
    write_trials(chosen, out / "submissions")
    # The runtime's command: results and grades.csv, no class report (nobody would read one of edits of one
    # reference, where every pair is alike).
    engine_bridge.run_engine([out / "submissions"], out / "grades", source, workers=workers,
                             timeout=engine_bridge.GRADE_TIMEOUT_S + 60 * len(chosen), env=env)
    return read_results(out / "grades")


def grade_trials(chosen: list[Trial], autograder_zip: pathlib.Path, out: pathlib.Path, workers: int) -> list[Verdict]:
    results = grade(chosen, autograder_zip, out, workers)
    return [judge(trial, results.get(trial.name)) for trial in chosen]


def adversarial_verdicts(out: pathlib.Path, workers: int, options=()) -> list[Verdict]:
    """The adversarial zoo (autograder/adversarial), when this checkout has it: hostile submissions,
    graded in their own batch by this checkout's engine (whose isolation the zoo is written against); options:
    more of the batch command's (--gpu)."""
    try:
        zoo = importlib.import_module("autograder.adversarial")
    except ModuleNotFoundError as error:
        if error.name not in ("autograder.adversarial", "autograder"):
            raise
        return []
    expectations = zoo.write_adversarial_zoo(out / "adversarial")
    secret = {zoo.channels.SECRET_VARIABLE: zoo.channels.SECRET}   # for the zoo's reader of the grader's environment
    engine_bridge.run_engine([out / "adversarial"], out / "adversarial-grades", REPO, workers=workers,
                             timeout=engine_bridge.GRADE_TIMEOUT_S + 60 * len(expectations), env=secret,
                             options=options)
    problems = zoo.verify(expectations, out / "adversarial-grades")
    verdicts = []
    for expectation in expectations:
        mine = [p.split(": ", 1)[1] for p in problems if p.startswith(f"{expectation.name}: ")]
        verdicts.append(Verdict(expectation.name, f"adv. {expectation.kind}", expectation.status,
                                "; ".join(mine) or "as expected", not mine))
    named = {f"{e.name}: " for e in expectations}
    verdicts += [Verdict("adversarial batch", "adv.", "clean", p, False)
                 for p in problems if not any(p.startswith(prefix) for prefix in named)]
    return verdicts


def selfcheck(out: pathlib.Path = DEFAULT_OUT, *, quick: bool = False, workers: int = 2,
              chosen: list[Trial] | None = None, dist: pathlib.Path | None = None) -> list[Verdict]:
    """Build into out/dist (or take the build in dist) and run every check; returns one verdict per
    check (failures included)."""
    out = pathlib.Path(out).resolve()
    for name in OWNED:
        shutil.rmtree(out / name, ignore_errors=True)
    found = consistency.problems()
    if found:   # nothing is graded against a declaration that contradicts itself
        return [Verdict(problem.where, "instructor", "consistent", problem.what, False) for problem in found]
    try:
        built = build_cli.build(out / "dist") if dist is None else build_cli.existing(dist)
    except packaging.BuildError as error:
        return [Verdict("build", "build", "succeeds", str(error).splitlines()[0], False)]
    verdicts = [check_handout(built.handout),
                *(Verdict(*found) for found in handout_check.student_view_verdicts(built.handout, built.notebook))]
    public = handout_check.start_public_checks(built.handout, out / "handout")   # beside the grading
    graded = []
    try:
        graded += grade_trials(trials(quick) if chosen is None else chosen, built.autograder, out, workers)
        if not quick and chosen is None:
            graded += adversarial_verdicts(out, workers)
    except engine_bridge.GradingFailed as error:
        graded.append(Verdict("batch", "engine", "runs", str(error).splitlines()[0], False))
    return [*verdicts, *(Verdict(*found) for found in handout_check.public_check_verdicts(public)), *graded]


def render(verdicts: list[Verdict]) -> str:
    rows = [("check", "kind", "expected", "got", "")] + [
        (v.name, v.kind, v.expected, v.got, "ok" if v.ok else "FAIL") for v in verdicts]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join([*(cell.ljust(w) for cell, w in zip(row[:3], widths, strict=True)), row[4].ljust(4), row[3]])
             for row in rows]
    failed = sum(not v.ok for v in verdicts)
    return "\n".join(lines) + f"\n\n{len(verdicts) - failed} passed, {failed} failed"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder selfcheck", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT,
                        help=f"working folder (default: {DEFAULT_OUT.relative_to(REPO)}); its "
                             f"{', '.join(OWNED)} sub-folders are replaced")
    parser.add_argument("--quick", action="store_true", help="one bug per part and one variant only")
    parser.add_argument("--workers", type=int, default=2, help="submissions graded at once (default 2)")
    parser.add_argument("--dist", type=pathlib.Path, default=None,
                        help="check the artefacts already built in this folder instead of building")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    start = time.perf_counter()
    verdicts = selfcheck(args.out, quick=args.quick, workers=args.workers, dist=args.dist)
    print(render(verdicts))
    artefacts = (args.dist or args.out / "dist").resolve()
    print(f"selfcheck took {time.perf_counter() - start:.0f} s; artefacts in {artefacts}")
    return 0 if all(v.ok for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
