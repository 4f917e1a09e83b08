"""python -m autograder build [--out dist] [--otter-config FILE]

Writes, from the master notebook, student/ and the hidden suite:
    dist/attention.ipynb            the student notebook (otter assign)
    dist/attention-handout.zip      what students download: student/ stubs + public checks, notebook, requirements
    dist/autograder.zip             upload to Gradescope: setup.sh, run_autograder, engine, hidden suite, otter_config
The handout is checked for hidden material (autograder.otter.leaks); a leak fails the build.
--otter-config FILE: otter_config.json keys laid over the defaults of autograder.zip, e.g.
{"show_hidden": false, "show_stdout": true} (see autograder/otter/config.py; others are refused).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
from dataclasses import dataclass, field

from autograder.otter import leaks, packaging
from grader.paths import REPO

DEFAULT_OUT = REPO / "dist"
HANDOUT_NAME = "attention-handout.zip"
AUTOGRADER_NAME = "autograder.zip"


@dataclass
class BuildResult:
    out: pathlib.Path
    notebook: pathlib.Path
    handout: pathlib.Path
    autograder: pathlib.Path
    seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        lines = []
        for label, path in (("student notebook", self.notebook), ("handout", self.handout),
                            ("Gradescope autograder", self.autograder)):
            lines.append(f"  {label:<22} {path}  ({path.stat().st_size / 1024:.0f} KiB)")
        timing = ", ".join(f"{step} {seconds:.1f} s" for step, seconds in self.seconds.items())
        return "\n".join(lines) + f"\n  time: {timing}; total {sum(self.seconds.values()):.1f} s"


def existing(out: pathlib.Path) -> BuildResult:
    """The artefacts of an earlier build in out; raises packaging.BuildError when one is missing."""
    out = pathlib.Path(out).resolve()
    paths = [out / packaging.NOTEBOOK_NAME, out / HANDOUT_NAME, out / AUTOGRADER_NAME]
    missing = [path.name for path in paths if not path.is_file()]
    if missing:
        raise packaging.BuildError(f"{out} holds no complete build: missing {', '.join(missing)}")
    return BuildResult(out, *paths)


def build(out: pathlib.Path = DEFAULT_OUT, otter_config: dict | None = None) -> BuildResult:
    """Build everything into out; raises packaging.BuildError on any problem (leaks included)."""
    out = pathlib.Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    seconds = {}

    start = time.perf_counter()
    notebook = packaging.student_notebook(packaging.MASTER_NOTEBOOK, out / packaging.NOTEBOOK_NAME)
    seconds["otter assign"] = time.perf_counter() - start

    start = time.perf_counter()
    handout = packaging.build_handout(out / HANDOUT_NAME, notebook)
    findings = leaks.find_leaks(handout)
    if findings:
        handout.unlink()
        raise packaging.BuildError("the handout would leak hidden material:\n  " + "\n  ".join(findings))
    seconds["handout"] = time.perf_counter() - start

    start = time.perf_counter()
    autograder = packaging.build_autograder_zip(out / AUTOGRADER_NAME, otter_config)
    seconds["autograder.zip"] = time.perf_counter() - start
    return BuildResult(out, notebook, handout, autograder, seconds)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder build", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT, help="output folder (default: dist/)")
    parser.add_argument("--otter-config", type=pathlib.Path, metavar="FILE",
                        help="otter_config.json keys over autograder.zip's defaults (show_hidden, show_stdout, ...)")
    args = parser.parse_args(argv)
    if args.out.exists() and not args.out.is_dir():
        print(f"build failed: --out {args.out} is a file, not a folder", file=sys.stderr)
        return 2
    try:
        overrides = json.loads(args.otter_config.read_text()) if args.otter_config else None
    except (OSError, json.JSONDecodeError) as error:
        print(f"build failed: --otter-config {args.otter_config}: {error}", file=sys.stderr)
        return 2
    try:
        result = build(args.out, overrides)
    except (packaging.BuildError, OSError) as error:
        print(f"build failed: {error}", file=sys.stderr)
        return 1
    print(f"built into {result.out}:\n{result.summary()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
