"""python -m grader PATH... --out DIR: the runtime's batch command (grader/run/command.py), what Gradescope's run
and `otter run` call. `python -m autograder grade` is this and then the class reports."""
import sys

from grader.run.command import main

if __name__ == "__main__":
    sys.exit(main())
