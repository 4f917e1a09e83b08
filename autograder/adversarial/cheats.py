"""Cheats on top of the stubs: each tries to score without solving anything and must score exactly 0."""
from __future__ import annotations

from autograder.adversarial.base import Context, Entry, payload, stub_init
from autograder.adversarial.expectations import Expectation
from autograder.samples import edited_reference, write_submission

HOOK = "\nfrom ._attack import install as _install_attack\n\n_install_attack(globals())\n"
DEVICE_BUG = ("masking.py", "    return torch.ones(L, S, dtype=torch.bool, device=device).tril()",
              "    return torch.ones(L, S, dtype=torch.bool).tril()")


def _attack(name: str, *, solution: bool = False, bug=None):
    def write(dest, context: Context):
        overrides = dict(edited_reference(*bug)) if bug else {}
        overrides.update({"__init__.py": stub_init() + HOOK, "_attack.py": payload(name, context, own=str(dest)),
                          "_common.py": payload("_common", context)})
        write_submission(dest, solution=solution, overrides=overrides)
    return write


def _cheat(name: str, payload_name: str, why: str, *, needs_root=False, forbidden=(), silent=()) -> Entry:
    expectation = Expectation(name, "cheat", "graded", why, score=0.0, forbidden_paths=forbidden,
                              forbidden_output=silent)
    return Entry(expectation, _attack(payload_name), needs_root=needs_root)


def entries(context: Context) -> list[Entry]:
    reduce_marker = (str(context.markers / "reduce-ran"),)
    return [
        _cheat("cheat-patch-comparisons", "patch_comparisons",
               "patches torch/numpy comparisons and the grader's check functions to say 'equal'"),
        _cheat("cheat-oracle-hunt", "oracle_hunt", "walks caller frames, sys.modules and gc for the grader's oracle"),
        _cheat("cheat-steal-reference", "steal_reference",
               "reads the reference, the hidden tests, the git history and other submissions", needs_root=True),
        _cheat("cheat-forge-results", "forge_results", "writes a perfect grades.csv and results/*.json into --out",
               needs_root=True),
        _cheat("cheat-kill-grader", "kill_grader", "kills and stops its parent, siblings and their process group",
               needs_root=True),
        _cheat("cheat-snoop-memory", "snoop_memory",
               "searches the memory it inherited for other submissions' paths and gradebook rows",
               silent=("found: ", "row: ")),
        _cheat("cheat-lying-tensor", "lying_tensor", "returns a Tensor subclass whose comparisons always say equal"),
        _cheat("cheat-malicious-reduce", "malicious_reduce", "returns objects whose __reduce__ runs code on load",
               forbidden=reduce_marker),
        _cheat("cheat-raw-frames", "raw_frames", "writes malicious pickles straight into the sandbox's socket",
               forbidden=reduce_marker),
        _cheat("cheat-mutate-inputs", "mutate_inputs", "zeroes the caller's tensors in place and returns zeros"),
        Entry(Expectation("cheat-misreport-device", "cheat", "graded",
                          "an honest device bug plus an executor patch that claims every result is on the asked device "
                          "and every argument unchanged", no_better_than="bug-mask-on-default-device",
                          flag="executor.execute_call was replaced"),
              _attack("misreport_device", solution=True, bug=DEVICE_BUG)),
        Entry(Expectation("bug-mask-on-default-device", "control", "graded",
                          "the honest device bug the misreporting cheat starts from", baseline="reference",
                          lost_parts=(2, 5, 6)),
              lambda dest, _context: write_submission(dest, overrides=edited_reference(*DEVICE_BUG))),
    ]
