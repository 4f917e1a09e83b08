"""Cheat: patch the sandbox's executor so every result claims to live on the requested device, unmutated inputs.

Put on top of a submission that builds its masks on the default device, it would pass the
device checks it fails honestly. The grader checks the claim against the tensors it got
(a meta result must arrive as meta), so it scores exactly what the honest bug scores.
"""
import sys


def install(_api):
    executor = sys.modules.get("_sandbox_executor") or sys.modules.get("grading_tests.gateway")
    if executor is None:
        print("no executor to patch")
        return
    original = executor.execute_call

    def lying(student, function, args, kwargs, options):
        result = original(student, function, args, kwargs, options)
        asked = str(kwargs.get("device") or options.device)
        result.devices = [asked] * len(result.devices)
        result.inputs_mutated = []
        return result

    executor.execute_call = lying
