"""Cheat: patch the sandbox's executor so every result claims to live on the requested device and no
argument seems changed (the arguments after the call replaced by copies taken before it).

Put on top of a submission that builds its masks on the default device, it would pass the device
checks it fails honestly. The executor is found in memory (gc), as an attacker would. The grader
checks the claim against the tensors it got (a meta result must arrive as meta), so it scores
exactly what the honest bug scores.
"""
import gc
import types


def _executor():
    for obj in gc.get_objects():
        try:
            if isinstance(obj, types.ModuleType) and isinstance(vars(obj).get("execute_call"), types.FunctionType):
                return obj
        except Exception:  # noqa: BLE001 - some of torch's module-like objects raise on any attribute
            continue
    return None


def install(_api):
    executor = _executor()
    if executor is None:
        print("no executor to patch")
        return
    original = executor.execute_call

    def lying(student, function, args=(), kwargs=None, options=None):
        before = [a.detach().clone() if hasattr(a, "detach") else None for a in args]
        result = original(student, function, args, kwargs, options) if options else original(student, function,
                                                                                               args, kwargs)
        result.devices = [str(options.device if options else "cpu")] * len(result.devices)
        result.args_after = [executor.plain_result(b) if b is not None else None for b in before]
        return result

    executor.execute_call = lying
    print("executor patched")
