"""Instructor tooling: stubs, sample submissions, the grading engine, the Otter/Gradescope build."""
