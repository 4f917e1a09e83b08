"""The processes of one batch (the process map is in grader/__init__.py): the command (command.py), the batch
(batch.py), the warm template (pool.py; template_boot.py starts it, the command's first act), a worker per
submission (worker.py), its trusted process (trusted.py) and sandboxes (sandbox.py), and the handout's public
checks where Gradescope shows them (public_checks.py); what they read (submissions.py, unpacking.py,
run_settings.py) and write (outcome.py, gradebook.py, files.py, changes.py, recorded.py, progress.py).
"""
