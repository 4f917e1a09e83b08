"""python -m grader PATH... --out DIR: the runtime's batch command (grader/run/command.py), what Gradescope's run
and `otter run` call. `python -m autograder grade` is this and then the class reports."""
import sys

from grader.run import template_boot

if __name__ == "__main__":
    # First of all, before the rest of the engine loads: torch's import in the template runs beside it.
    started = template_boot.start()
    from grader.run.command import main
    sys.exit(main(started=started))
