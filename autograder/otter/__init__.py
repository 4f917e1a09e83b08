"""Otter-Grader / Gradescope integration.

- engine_bridge: the one function through which Otter grades a submission (our engine, our hidden suite).
- plugin: the Otter plugin that replaces what `otter run` / Gradescope would grade with that function.
- packaging: assembles dist/autograder.zip and the student handout zip.

Nothing in this package imports the `student` package: it runs in the trusted grading process.
"""
