"""Otter-Grader / Gradescope integration.

On Gradescope (no otter, no Jupyter kernel):
- image: setup.sh (Python 3.11 and exactly the pins grading imports), run_autograder, the image's requirements.
- run_autograder: what run_autograder starts: grades /autograder/submission, writes results/results.json.
- engine_bridge: the one door from here to grading: runs the batch command on one submission.
- config: the otter_config.json keys honoured (otter's meanings; hidden tests shown after publication).
- view: the engine's results as Gradescope should show them under that config.
- schema: Gradescope's results.json specification as a checker.
Locally:
- plugin: `otter run -a autograder.zip` grades through run_autograder too (loaded by otter-loader/).
- harness: Gradescope's harness rebuilt in a temporary folder (`python -m autograder.otter.harness`).
Building:
- packaging: assembles dist/autograder.zip, the student notebook and the student handout zip.
- closure: what the files shipped in autograder.zip import: our modules left out, third-party packages.
- leaks: proves a handout holds no hidden test, reference code or hidden expected value.

Nothing in this package imports the `student` package: it runs in the trusted grading process.
"""
