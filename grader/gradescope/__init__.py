"""The runtime on Gradescope: run_gradescope.py (run_autograder's entry: one submission, results.json),
gradescope_view.py and gradescope_schema.py (what Gradescope is shown, and its schema), engine_bridge.py (runs the
batch command from the unpacked autograder.zip) and plugin.py (the same for `otter run`).
"""
