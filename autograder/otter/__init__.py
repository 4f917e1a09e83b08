"""Otter-Grader / Gradescope integration.

- engine_bridge: the one door from Otter to grading: runs the batch command on one submission.
- plugin: the Otter plugin that replaces what `otter run` / Gradescope would grade with that door.
- packaging: assembles dist/autograder.zip, the student notebook and the student handout zip.
- closure: which of our modules the files shipped in autograder.zip import but do not ship.
- leaks: proves a handout holds no hidden test, reference code or hidden expected value.

Nothing in this package imports the `student` package: it runs in the trusted grading process.
"""
