"""Attack code copied into adversarial submissions as student/_attack.py (and _common.py).

Importing these modules does nothing: each attack runs only when a submission's
student/__init__.py calls install(globals()). Placeholders such as "@REPO@" are
filled in by autograder.adversarial when the submission is written.
"""
