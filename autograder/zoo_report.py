"""python -m autograder zoo-report [--dist DIR] [--out DIR] [--workers N] [--bug NAME ...]

The blast radius of every bug of the zoo (autograder/zoo/bugs.py): each is graded through the engine
shipped in autograder.zip, as the self-check grades it, and the report says, per bug, how many
tests it fails and the points it loses inside its own part and outside it, by part.

A bug may cost points outside its part only in the parts that call its part's functions
(grader.scoring.PART_USES): Part 5 builds on Parts 1-4, so a broken split_heads costs
Part 5 too, and the feedback then names the root ("Part 3 ... fails; Parts 5 and 6 use it").
A loss anywhere else is a stray: a test failing for a property it does not name. The command
prints a Markdown table and a summary, and exits with status 1 when a bug loses nothing in its
own part, loses points in a part that does not use it, or cascades without the feedback naming
its root.
"""
from __future__ import annotations

import argparse
import pathlib
import shutil
import statistics
import sys
import time
from dataclasses import dataclass, field

from autograder import build_cli, selfcheck
from grader.paths import REPO
from grader.scoring import PART_POINTS, PART_TITLES, entry_part, parts_using

DEFAULT_OUT = REPO / "out" / "zoo-report"
# The sub-folders of --out this command owns (emptied first, so no stale result is reused).
OWNED = ("dist", "autograder-source", "submissions", "grades")


@dataclass(frozen=True)
class Radius:
    """What one bug costs."""
    name: str
    part: int
    score: float
    failed: int                                  # tests failed, all parts
    own_lost: float                              # points lost in its own part
    outside_lost: dict[int, float] = field(default_factory=dict)   # other part -> points lost there
    root_named: bool = True                      # the summary names the bug's part as the root, when it cascades

    @property
    def stray_parts(self) -> list[int]:
        """Parts outside its own that lose points but do not call its part's functions."""
        return sorted(set(self.outside_lost) - parts_using(self.part))

    @property
    def ok(self) -> bool:
        return self.own_lost > 0 and not self.stray_parts and self.root_named


def radius(name: str, part: int, results: dict) -> Radius:
    """The blast radius of one bug from its results.json."""
    lost: dict[int, float] = {}
    failed = 0
    for test in results["tests"]:
        if test.get("status") != "failed":   # passed, or the informational entry of tests not run
            continue
        failed += 1
        test_part = entry_part(test)
        lost[test_part] = lost.get(test_part, 0.0) + float(test["max_score"])
    outside = {p: round(points, 2) for p, points in sorted(lost.items()) if p != part}
    root_named = not outside or f"Part {part} ({PART_TITLES[part]}) fails; " in results.get("output", "")
    return Radius(name, part, float(results["score"]), failed, round(lost.get(part, 0.0), 2), outside, root_named)


def graded(chosen: list[selfcheck.Trial], out: pathlib.Path, workers: int,
           dist: pathlib.Path | None = None) -> tuple[list[Radius], list[str]]:
    """Grade the chosen bugs through the engine of a build (made in out/dist, or dist's), as the self-check does;
    (their radii, the names of cases the engine wrote no result for)."""
    for name in OWNED:
        shutil.rmtree(out / name, ignore_errors=True)
    built = build_cli.build(out / "dist") if dist is None else build_cli.existing(dist)
    results = selfcheck.grade(chosen, built.autograder, out, workers)
    return radii(chosen, results), [case.name for case in chosen if case.name not in results]


def radii(cases: list[selfcheck.Trial], results: dict[str, dict]) -> list[Radius]:
    return [radius(case.name.removeprefix("bug-"), case.part, results[case.name])
            for case in cases if case.kind == "bug" and case.name in results]


def render(found: list[Radius]) -> str:
    """A Markdown table, one row per bug, and a summary paragraph with the figures."""
    lines = ["| bug | part | tests failed | points lost in its part | points lost in parts that use it | score |",
             "|---|---|---|---|---|---|"]
    for r in sorted(found, key=lambda r: (r.part, r.name)):
        outside = ", ".join(f"Part {p}: {points:g}" for p, points in r.outside_lost.items()) or "none"
        flags = "".join([f" STRAY in Part(s) {r.stray_parts}" if r.stray_parts else "",
                         "" if r.own_lost > 0 else " NOTHING LOST IN ITS PART",
                         "" if r.root_named else " ROOT NOT NAMED"])
        lines.append(f"| {r.name} | {r.part} | {r.failed} | {r.own_lost:g} / {PART_POINTS[r.part]} | {outside}{flags} "
                     f"| {r.score:.2f} |")
    return "\n".join(lines) + "\n\n" + summary(found)


def by_part(found: list[Radius]) -> str:
    """A Markdown table, one row per part: its bugs' tests failed, points lost in the part, cascades and scores."""
    def spread(values) -> str:
        return f"{statistics.median(values):g} ({min(values):g} to {max(values):g})"

    lines = ["| part | bugs | tests failed (median, range) | points lost in its own part (median, range) "
             "| also cost the parts that use theirs | lowest and highest score |", "|---|---|---|---|---|---|"]
    for part in sorted({r.part for r in found}):
        mine = [r for r in found if r.part == part]
        lines.append(f"| {part} | {len(mine)} | {spread([r.failed for r in mine])} | "
                     f"{spread([r.own_lost for r in mine])} of {PART_POINTS[part]:g} | "
                     f"{sum(bool(r.outside_lost) for r in mine)} | "
                     f"{min(r.score for r in mine):.2f}, {max(r.score for r in mine):.2f} |")
    return "\n".join(lines)


def summary(found: list[Radius]) -> str:
    if not found:
        return "No bug graded."
    cascading = [r for r in found if r.outside_lost]
    outside_totals = [sum(r.outside_lost.values()) for r in found]
    problems = [r for r in found if not r.ok]
    return (f"{len(found)} bugs: every one loses points in its own part: "
            f"{'yes' if all(r.own_lost > 0 for r in found) else 'NO'}; "
            f"{len(found) - len(cascading)} lose points only there; {len(cascading)} also lose points in the parts "
            f"that call the broken part (median {statistics.median(outside_totals):g}, "
            f"at most {max(outside_totals):g} points outside their part), "
            f"and the feedback names the root part for {sum(r.root_named for r in cascading)} of them; "
            f"{sum(bool(r.stray_parts) for r in found)} lose points in a part that does not use theirs. "
            f"Median tests failed per bug: {statistics.median(r.failed for r in found):g}. "
            + ("All as they should be." if not problems else f"Problems: {', '.join(r.name for r in problems)}."))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder zoo-report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT,
                        help=f"working folder (default: {DEFAULT_OUT.relative_to(REPO)})")
    parser.add_argument("--dist", type=pathlib.Path, default=None,
                        help="grade with the autograder.zip of an earlier `python -m autograder build --out DIR`")
    parser.add_argument("--workers", type=int, default=2, help="submissions graded at once (default 2)")
    parser.add_argument("--bug", action="append", default=None, metavar="NAME",
                        help="only this bug of the zoo (repeatable); default: every bug")
    args = parser.parse_args(argv)
    chosen = [case for case in selfcheck.trials() if case.kind == "bug"]
    if args.bug:
        unknown = set(args.bug) - {case.name.removeprefix("bug-") for case in chosen}
        if unknown:
            parser.error(f"no such bug in the zoo: {', '.join(sorted(unknown))}")
        chosen = [case for case in chosen if case.name.removeprefix("bug-") in args.bug]
    start = time.perf_counter()
    found, missing = graded(chosen, args.out.resolve(), args.workers, args.dist)
    print(render(found))
    print("\nBy part:\n\n" + by_part(found))
    if missing:
        print(f"\nno result for: {', '.join(missing)}")
    print(f"\nzoo-report took {time.perf_counter() - start:.0f} s")
    return 0 if found and not missing and all(r.ok for r in found) else 1


if __name__ == "__main__":
    sys.exit(main())
