"""Attacks on the channels between the grader's processes (issue 20): one entry per class, with its defence.

    1 text no UTF-8 writer accepts stops the gradebook  a path of non-UTF-8 bytes   sanitize.valid_text, atomic_write
    2 the grader's environment and argv read from a box /proc/self/environ, cmdline a fresh template (pool.py)
    3 the engine's own failure forged by the student    a `broken` frame at import  `locked` first (sandbox.py)
    6 an answer the decoder did not foresee crashes it  a dtype given as a list     every decoding error a refusal
    7 a flag that the student's code did not earn       printing tensors, compile   tripwires see who did it
   10 hidden inputs told at once, through what crashed  os._exit on a size of 5    the kind only at once (judge)

Classes 4 (visibility after a timeout), 5 (memory of a box's whole tree), 8 (a grader's TMPDIR) and 9
(files of Gradescope's container) are shown by tests of their own (tests/test_gradescope_harness.py,
autograder/adversarial/memory.py, tests/test_engine_channels.py). Each defence that no isolation layer provides
is shown to matter by a test that runs the attack against the old behaviour (tests/test_engine_channels.py).
Grade the zoo with SECRET_VARIABLE=SECRET in the grader's environment (tests/test_engine.py does), so that
class 2 has something to find.
"""
from __future__ import annotations

from autograder.adversarial import abuse
from autograder.adversarial.base import Context, Entry
from autograder.adversarial.escapes import at_import, cheat_with
from autograder.adversarial.expectations import Expectation
from autograder.samples import reference_source, write_submission

SECRET_VARIABLE = "AUTOGRADER_ZOO_SECRET"
SECRET = "course-token-6f1d2c"   # stands for the tokens and paths a grader's environment holds
# Ends its process in each graded call of merge_heads whose inputs hold a size of 5: which names crashed, and how
# often, are then chosen by the hidden inputs. Before, the row's message said both at once (grader/run/trusted.py).
CRASH_ON_A_FIVE = """\
if any(5 in tuple(getattr(arg, "shape", ())) for arg in args):
    _abuse_os._exit(0)"""


def _printing_and_compiled(dest, _context: Context) -> None:
    """The reference, printing the tensors it splits and with its scaled scores wrapped in torch.compile."""
    heads = reference_source("heads.py").replace('    """\n', '    """\n    print(x, repr(x * 2), x.shape)\n', 1)
    scaling = reference_source("scaling.py") + "\nscaled_scores = torch.compile(scaled_scores)\n"
    write_submission(dest, overrides={"heads.py": heads, "scaling.py": scaling})


def entries(_context: Context) -> list[Entry]:
    return [
        Entry(Expectation("spoil-text-that-is-not-utf-8", "abuse", "graded",
                          "opens and imports names of bytes that are not UTF-8 (lone surrogates in the notes): the "
                          "gradebook is written all the same", score=100.0),
              at_import("non_utf8_path", solution=True)),
        Entry(Expectation("escape-read-the-graders-environment", "abuse", "graded",
                          "reads /proc/self/environ and /proc/self/cmdline for the grader's secrets and command line; "
                          "found, it would fail its import with them", score=100.0, secret=SECRET),
              at_import("read_environment", solution=True, secret=SECRET)),
        Entry(Expectation("cheat-forge-the-graders-failure", "cheat", "error",
                          "writes the engine's `broken` message into its socket at import: refused as tampering, "
                          "the student's failure and not a grader error", score=0.0, message="refused",
                          flag="tampering", secret="grader error"), at_import("forge_broken", solution=True)),
        Entry(Expectation("cheat-dtype-as-a-list", "cheat", "graded",
                          "answers with a tensor whose dtype is a list: refused, flagged", score=0.0,
                          message="refused", flag="tampering with the sandbox"), cheat_with("dtype_as_list")),
        Entry(Expectation("control-prints-and-compiles", "control", "graded",
                          "the reference, printing tensors and wrapped in torch.compile (torch imports lazily): "
                          "full marks and no flag", score=100.0, flag_free=True), _printing_and_compiled),
        Entry(Expectation("abuse-crash-on-a-hidden-5", "abuse", "graded",
                          "ends its process in each call of merge_heads whose inputs hold a size of 5: that calls "
                          "crashed is told at once, never which or how many", message="restarted",
                          unsaid_at_once=("merge_heads", *"0123456789")),
              abuse.abusive("heads.py", "merge_heads", CRASH_ON_A_FIVE)),
    ]
