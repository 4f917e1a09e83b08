"""python -m autograder adequacy [--sample N] [--out DIR] [--workers N]

How adequate the hidden suite is, measured by machine on submissions generated from the reference, all graded
in one batch by this checkout's engine, exactly as students' code is graded:

    mutants      every mutant of the graded solution code (mutants.py, mutmut's operators) must lose points
                 in its own part, or be listed in equivalent.py with why: equivalent (it changes nothing
                 the docstrings promise), or graded later (it breaks what only a later part exercises)
    adversaries  every submission that computes nothing (adversaries.py) scores at most 3 points, and the
                 adversaries' layer answering right (the control) scores 100
    styles       every correct style (styles.py) scores exactly 100

Prints the figures and the table of survivors, writes OUT/adequacy.json, and exits with status 1 on an
unexplained survivor, an explanation that no longer holds (its mutant is killed now, or gone), an adversary
over the floor, or a correct style under 100. --sample N grades N mutants spread over the parts (and every
adversary and style): the quick check of .ci/run; the full run, its figures written into
docs/testing.md, is benchmarks/adequacy.py.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import pathlib
import shutil
import sys
import time
from dataclasses import asdict, dataclass

from autograder.adequacy import adversaries, styles
from autograder.adequacy.adversaries import FLOOR, Generated
from autograder.adequacy.equivalent import EQUIVALENT, GRADED_LATER
from autograder.adequacy.mutants import Mutant, mutants
from autograder.samples import write_submission
from autograder.selfcheck import FULL_MARKS, read_results
from autograder.zoo_report import radius
from grader.gradescope import engine_bridge
from grader.paths import REPO

DEFAULT_OUT = REPO / "out" / "adequacy"


@dataclass(frozen=True)
class MutantVerdict:
    key: str
    part: int
    own_lost: float
    outside_lost: dict
    stray_parts: list
    equivalent: str = ""        # why, from equivalent.EQUIVALENT
    later_part: int = 0         # the later part that grades what it breaks, and why (equivalent.GRADED_LATER)
    graded_later: str = ""

    @property
    def fate(self) -> str:
        """killed (in its own part), later (only in a part that builds on its own), or survived."""
        return "killed" if self.own_lost > 0 else "later" if self.outside_lost else "survived"


def reason(key: str, reasons: dict):
    """The reason of the first pattern that matches the key (None: none does)."""
    return next((why for pattern, why in reasons.items() if fnmatch.fnmatchcase(key, pattern)), None)


def sample(found: list[Mutant], count: int | None) -> list[Mutant]:
    """count mutants: every part in turn gets one more while it has some left, each part's spread evenly over
    its functions (which come in handout order); all of them when count is None."""
    if count is None or count >= len(found):
        return found
    by_part: dict[int, list[Mutant]] = {}
    for mutant in found:
        by_part.setdefault(mutant.part, []).append(mutant)
    quota = dict.fromkeys(by_part, 0)
    while sum(quota.values()) < count:
        for part in (p for p in by_part if quota[p] < len(by_part[p])):
            if sum(quota.values()) < count:
                quota[part] += 1
    chosen = {id(group[int(i * len(group) / quota[part])]) for part, group in by_part.items()
              for i in range(quota[part])}
    return [mutant for mutant in found if id(mutant) in chosen]


def write_all(out: pathlib.Path, chosen: list[Mutant]) -> list[Generated]:
    folder = out / "submissions"
    generated = adversaries.write(folder) + styles.write(folder)
    for mutant in chosen:
        write_submission(folder / mutant.slug, overrides={mutant.module: mutant.text})
    return generated


def judge_mutants(chosen: list[Mutant], results: dict[str, dict]) -> list[MutantVerdict]:
    verdicts = []
    for mutant in chosen:
        found = radius(mutant.key, mutant.part, results[mutant.slug])
        later = reason(mutant.key, GRADED_LATER)
        later_part, why_later = later or (0, "")
        verdicts.append(MutantVerdict(mutant.key, mutant.part, found.own_lost, found.outside_lost, found.stray_parts,
                                      reason(mutant.key, EQUIVALENT) or "", later_part, why_later))
    return verdicts


def mutant_problems(verdicts: list[MutantVerdict], every_mutant: list[Mutant], full: bool) -> list[str]:
    found = []
    for v in verdicts:
        if v.fate == "survived" and not v.equivalent:
            found.append(f"survivor with no reason in equivalent.py (a gap in the suite?): {v.key}")
        if v.fate != "survived" and v.equivalent:
            found.append(f"listed as equivalent but loses points now (remove it from equivalent.py): {v.key}")
        if v.fate == "later" and not v.graded_later:
            found.append(f"loses points only in Part(s) {sorted(v.outside_lost)}, not in its own: {v.key}")
        if v.later_part and (v.fate != "later" or v.later_part not in v.outside_lost):
            found.append(f"listed in GRADED_LATER (Part {v.later_part}) but {v.fate}, losing {v.outside_lost}: "
                         f"{v.key}")
        if v.stray_parts:
            found.append(f"{v.key} loses points in Part(s) {v.stray_parts}, which do not use its part")
    if full:
        keys = [m.key for m in every_mutant]
        found += [f"equivalent.py: the pattern {pattern!r} matches no mutant"
                  for pattern in [*EQUIVALENT, *GRADED_LATER] if not fnmatch.filter(keys, pattern)]
    return found


def generated_problems(generated: list[Generated], results: dict[str, dict]) -> list[str]:
    found = []
    for g in generated:
        row = results.get(g.name)
        if row is None:
            found.append(f"{g.name}: no result")
            continue
        score = float(row["score"])
        if g.kind == "adversary" and score > FLOOR:
            found.append(f"{g.name} scores {score:g} without computing anything (the floor is {FLOOR:g})")
        if g.kind in ("style", "control") and score != FULL_MARKS:
            found.append(f"{g.name} is correct but scores {score:g}")
    return found


def render(verdicts: list[MutantVerdict], generated: list[Generated], results: dict[str, dict],
           total_mutants: int) -> str:
    fates = {fate: [v for v in verdicts if v.fate == fate] for fate in ("killed", "later", "survived")}
    equivalent = [v for v in fates["survived"] if v.equivalent]
    unexplained = len(verdicts) - len(fates["killed"]) - len(equivalent) - sum(bool(v.graded_later)
                                                                              for v in fates["later"])
    lines = [f"mutants killed in their own part: {len(fates['killed'])} / {len(verdicts)}"
             + (f" (a sample of the {total_mutants})" if len(verdicts) < total_mutants else "")
             + f"; killed in the later part that grades what they break: {len(fates['later'])}; "
             f"equivalent: {len(equivalent)}; unexplained: {unexplained}"]
    if verdicts:
        score = 100 * (len(fates["killed"]) + len(fates["later"])) / max(1, len(verdicts) - len(equivalent))
        lines.append(f"mutation score (killed / not equivalent): {score:.1f}%")
    scores = {g.name: float(results[g.name]["score"]) for g in generated if g.name in results}
    floor = [scores[g.name] for g in generated if g.kind == "adversary" and g.name in scores]
    if floor:
        lines.append(f"highest score without computing: {max(floor):g} / 100 (at most {FLOOR:g}): "
                     + ", ".join(f"{g.name.removeprefix('adversary-')} {scores.get(g.name, 0):g}"
                                 for g in generated if g.kind == "adversary"))
    lines.append("correct styles: " + ", ".join(f"{g.name.removeprefix('style-')} {scores.get(g.name, 0):g}"
                                               for g in generated if g.kind == "style")
                 + f"; the adversaries' control: {scores.get(adversaries.CONTROL, 0):g}")
    spared = fates["later"] + fates["survived"]
    if spared:
        lines += ["", "| mutant spared by its own part | part | why |", "|---|---|---|"]
        lines += [f"| `{v.key}` | {v.part} | " + (v.equivalent or (v.later_part and f"graded in Part {v.later_part}: "
                                                                 f"{v.graded_later}") or "UNEXPLAINED") + " |"
                  for v in spared]
    return "\n".join(lines)


@dataclass
class Measured:
    """One adequacy run: what it prints (the figures, then the table of survivors), what is wrong, how much."""
    text: str
    problems: list[str]
    graded: int       # submissions graded: mutants, adversaries and styles
    seconds: float

    @property
    def figures(self) -> str:
        """The figures alone (the lines before the table of survivors)."""
        return self.text.split("\n\n", 1)[0]

    def shown(self) -> str:
        """What a run prints: the figures, the table of survivors, and what is wrong, if anything."""
        return self.text + ("\n\nproblems:\n  " + "\n  ".join(self.problems) if self.problems else "")


def run(out: pathlib.Path, *, sample_size: int | None = None, workers: int = 2) -> Measured:
    """Write and grade the submissions in out (emptied first); their verdicts in out/adequacy.json."""
    start = time.perf_counter()
    out = out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    every = mutants()
    chosen = sample(every, sample_size)
    generated = write_all(out, chosen)
    count = len(chosen) + len(generated)
    engine_bridge.run_engine([out / "submissions"], out / "grades", REPO, workers=workers,
                             timeout=engine_bridge.GRADE_TIMEOUT_S + 30 * count)
    results = read_results(out / "grades")
    missing = [m.key for m in chosen if m.slug not in results]
    verdicts = judge_mutants([m for m in chosen if m.slug in results], results)
    found = mutant_problems(verdicts, every, full=sample_size is None) + generated_problems(generated, results)
    found += [f"no result for mutant {key}" for key in missing]
    (out / "adequacy.json").write_text(json.dumps({
        "mutants": [asdict(v) | {"fate": v.fate} for v in verdicts],
        "generated": [asdict(g) | {"score": results.get(g.name, {}).get("score")} for g in generated],
        "problems": found}, indent=1))
    return Measured(render(verdicts, generated, results, len(every)), found, count, time.perf_counter() - start)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder adequacy", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=None, metavar="N",
                        help="grade N mutants spread over the parts (default: every mutant)")
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT,
                        help=f"working folder, emptied first (default: {DEFAULT_OUT.relative_to(REPO)})")
    parser.add_argument("--workers", type=int, default=2, help="submissions graded at once (default 2)")
    args = parser.parse_args(argv)
    measured = run(args.out, sample_size=args.sample, workers=args.workers)
    print(measured.shown())
    print(f"\nadequacy: {measured.graded} submissions graded in {measured.seconds:.0f} s; "
          f"wrote {args.out.resolve() / 'adequacy.json'}")
    return 1 if measured.problems else 0


if __name__ == "__main__":
    sys.exit(main())
