"""The runtime on Gradescope: run_autograder.py (run_autograder's entry: one submission, results.json),
view.py and schema.py (what Gradescope is shown, and its schema), engine_bridge.py (runs the
batch command from the unpacked autograder.zip) and plugin.py (the same for `otter run`).
"""
