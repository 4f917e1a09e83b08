"""python -m autograder <command> ...

Each command lives in its own module; this file only dispatches.
"""
import importlib
import os
import sys

from assignment.spec_error import SpecError

COMMANDS = {
    "grade": ("autograder.grade_cli", "grade submissions safely into a gradebook"),
    "build": ("autograder.build_cli", "build dist/: student notebook, handout zip, Gradescope autograder.zip"),
    "selfcheck": ("autograder.selfcheck", "build everything and verify the grader end to end"),
    "zoo-report": ("autograder.zoo_report", "what each bug of the zoo costs, inside and outside its part"),
    "spec": ("assignment.spec", "print the parts and settings of assignment/assignment.toml, with their meanings"),
    "generate": ("autograder.derived", "rewrite what assignment/assignment.toml and the reference derive (stubs, ...)"),
    "rename": ("autograder.rename", "rename a graded function in every file that names it, then generate"),
    "adequacy": ("autograder.adequacy.report", "measure the hidden suite: mutants, adversaries, styles"),
    "examples": ("autograder.examples", "write a small example class of submissions to grade (out/example-class)"),
}


def usage() -> str:
    lines = ["usage: python -m autograder <command> [options]", "", "commands:"]
    lines += [f"  {name:<10} {summary}" for name, (_module, summary) in COMMANDS.items()]
    return "\n".join(lines)


def resuming(arguments: list[str]) -> bool:
    """Whether grade's --out already holds results, read from the raw arguments (before argparse loads): only
    when the template starts, never what is graded."""
    out = next((arguments[i + 1] for i, arg in enumerate(arguments[:-1]) if arg == "--out"),
               next((arg.removeprefix("--out=") for arg in arguments if arg.startswith("--out=")), None))
    if out is None:
        return False
    try:
        with os.scandir(os.path.join(out, "results")) as entries:
            return any(entry.name.endswith(".json") for entry in entries)
    except OSError:
        return False


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print(usage(), file=sys.stderr if argv and argv[0] not in ("-h", "--help") else sys.stdout)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    started = None
    if argv[0] == "grade" and not resuming(argv[1:]):
        # First of all: torch's import in the template runs beside the command's loading. A resume (or the closing
        # run of shards) may grade nothing: its template starts at its first job, if any (grader/run/command.py).
        from grader.run import template_boot
        started = template_boot.start()
    try:
        module = importlib.import_module(COMMANDS[argv[0]][0])
        return module.main(argv[1:]) if started is None else module.main(argv[1:], started=started)
    except SpecError as error:
        # The spec is read as the commands' modules load (assignment.spec may fail to import): an instructor's
        # edit of assignment/assignment.toml gets what is wrong, not a traceback.
        print(f"{argv[0]}: the assignment's declaration cannot be used: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
