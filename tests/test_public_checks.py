"""The public checks point at the real mistake: each planted mistake fails the right part's check with
a message that names the function at fault, and nothing crashes on the student's own NaN or shapes.

Mistakes are planted in the reference's solution bodies (autograder.samples.edited_reference); the
reference itself passes every public check (tests/test_core.py).
"""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
import torch

from autograder.samples import edited_reference, write_submission
from autograder.stubs import generated_stubs
from student.check import plain_reason
from student.parts import is_stub_error, is_stub_message
from student.tests import helpers
from tests.patience import SAFETY_NET_S

CAUSAL = "    return torch.ones(L, S, dtype=torch.bool, device=device).tril()"
FILL = '    return scores.masked_fill(~mask, float("-inf"))'
SPLIT = "    return x.reshape(B, L, num_heads, E // num_heads).transpose(1, 2)"
MERGE = "    return x.transpose(1, 2).reshape(B, L, H * D)"
EXPAND = "    return mask[:, None, None, :].expand(B, 1, num_queries, S)"
SCORES = "    return torch.matmul(q, k.transpose(-2, -1)) * scale"
MANUAL = "            heads, _ = scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal, dropout_p=dropout_p)"
FUSED_MASK = "attn_mask=mask, dropout_p=dropout_p"

# name -> (module, old, new, {part row: texts its first failure must hold}, {part row: texts it must not hold})
PLANTED = {
    # Issue 13, item 1: the manual path's NaN used to crash the helper (IndexError) in Part 6's check.
    "apply-mask-inverted": ("masking.py", FILL, FILL.replace("~mask", "mask"),
                            {"6": ["the MANUAL path", "fused path agrees", "holds nan at index"]},
                            {"6": ["IndexError", "FUSED"]}),
    # Items 2 and 5: a float 0/1 causal mask passed Part 2 and surfaced as "not implemented yet" in Part 4.
    "causal-mask-float": ("masking.py", CAUSAL, CAUSAL.replace("dtype=torch.bool", "dtype=torch.float32"),
                          {"2": ["causal_mask(3) returned dtype torch.float32, expected torch.bool"], "4": ["3/3"]},
                          {"4": ["not implemented yet"]}),
    # Item 2: PyTorch's own NotImplementedError is an error in written code, not a missing part.
    "expanded-mask-float": ("padding.py", EXPAND, EXPAND.replace(".expand(", ".float().expand("),
                            {"4": ["expand_padding_mask", "expected torch.bool"],
                             "6": ["NotImplementedError: \"bitwise_and_cpu\" not implemented for 'Float'",
                                   "(in scaled_dot_product_attention, masking.py line"]},
                            {"6": ["not implemented yet"]}),
    # Item 3: Part 6 names the path that disagrees with plain PyTorch math.
    "fused-ignores-padding": ("multihead.py", FUSED_MASK, FUSED_MASK.replace("attn_mask=mask", "attn_mask=None"),
                              {"5": ["11/11"], "6": ["the FUSED path", "the manual path agrees"]}, {"6": ["MANUAL"]}),
    "manual-ignores-padding": ("multihead.py", MANUAL, MANUAL.replace("(q, k, v, mask,", "(q, k, v, None,"),
                               {"5": ["padding_mask", "nn.MultiheadAttention"],
                                "6": ["the MANUAL path", "the fused path agrees"]}, {"6": ["FUSED"]}),
    # Item 4: a split without the transpose is caught by split_heads' own check, which says so.
    "split-without-transpose": ("heads.py", SPLIT, "    return x.reshape(B, num_heads, L, E // num_heads)",
                                {"3": ["split_heads(x (2,3,6), 3)[", "(token 1, feature 0)", "got x[0, 0, 2]"]},
                                {"3": ["merge_heads"]}),
    "merge-without-transpose": ("heads.py", MERGE, "    return x.reshape(B, L, H * D)",
                                {"3": ["merge_heads(heads (1,2,3,2))"]}, {"3": ["split_heads"]}),
    # The contract's two sharpened requirements: float64 stays float64; each head scales by 1/sqrt(D).
    "scores-in-float32": ("scaling.py", SCORES, SCORES.replace("(q, k.transpose", "(q.float(), k.float().transpose"),
                          {"1": ["expected torch.float64", "lower precision"]}, {}),
    "module-scaled-by-sqrt-E": ("multihead.py", MANUAL,
                                MANUAL.replace("dropout_p)", "dropout_p, scale=self.embed_dim ** -0.5)"),
                                {"5": ["against nn.MultiheadAttention"], "6": ["the MANUAL path"]}, {}),
    # The lesson's float16 point: -1e9 does not fit in float16; the error names where it happened.
    "fill-minus-1e9": ("masking.py", FILL, FILL.replace('float("-inf")', "-1e9"),
                       {"2": ["test_apply_mask_works_in_float16", "(in apply_mask, masking.py line"]}, {}),
}


# name -> the edits of a submission whose fix-first notes are checked (test_a_fix_first_note_names_...)
FIX_FIRST = {
    # Part 1 fails in a way Part 2's checks never meet (float32 arithmetic for float64 inputs) and causal_mask,
    # which calls nothing, is built the tutorials' way (triu: True where hidden).
    "apart": {**edited_reference("scaling.py", SCORES,
                                 SCORES.replace("(q, k.transpose", "(q.float(), k.float().transpose")),
              **edited_reference("masking.py", CAUSAL, CAUSAL.replace(".tril()", ".triu(diagonal=1)"))},
    "through": edited_reference("scaling.py", SCORES, SCORES.replace(" * scale", "")),   # unscaled scores
    "inverted": edited_reference("masking.py", CAUSAL, CAUSAL.replace(".tril()", ".triu(diagonal=1)")),
}


def rows_of(stdout: str) -> dict[str, str]:
    """The table's rows, by their label (a part's number, or "-" for the student's own checks)."""
    return {line.split()[0]: line for line in stdout.splitlines() if line[:1].isdigit() or line.startswith("- ")}


def check_table(folder, *args) -> tuple[int, dict[str, str], str]:
    """Run `python -m student.check` in a submission folder: (exit status, row label -> row, all output)."""
    proc = subprocess.run([sys.executable, "-m", "student.check", *args], cwd=folder, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(folder)}, timeout=SAFETY_NET_S)
    return proc.returncode, rows_of(proc.stdout), proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> dict[str, tuple[int, dict[str, str], str]]:
    """check_table of each planted mistake and FIX_FIRST submission, by name: all of them checked by one Python
    (tests/check_runs.py), each as its own `python -m student.check` would check it."""
    root = tmp_path_factory.mktemp("planted")
    folders = {name: write_submission(root / name, overrides=edited_reference(module, old, new))
               for name, (module, old, new, _must, _must_not) in PLANTED.items()}
    folders.update({name: write_submission(root / name, overrides=edits) for name, edits in FIX_FIRST.items()})
    proc = subprocess.run([sys.executable, str(pathlib.Path(__file__).with_name("check_runs.py")),
                           *map(str, folders.values())], capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode == 0, proc.stderr
    runs = json.loads(proc.stdout)
    return {name: (runs[str(folder)][0], rows_of(runs[str(folder)][1]), runs[str(folder)][1])
            for name, folder in folders.items()}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PLANTED))
def test_a_planted_mistake_fails_the_right_check_with_the_right_message(name, checked):
    _module, _old, _new, must, must_not = PLANTED[name]
    code, rows, output = checked[name]
    assert code == 1 and "Traceback" not in output, output
    for row, texts in must.items():
        for text in texts:
            assert text in rows[row], f"row {row} should say {text!r}:\n{output}"
    for row, texts in must_not.items():
        for text in texts:
            assert text not in rows[row], f"row {row} should not say {text!r}:\n{output}"


@pytest.mark.slow
def test_a_fix_first_note_names_the_earlier_function_a_failing_check_called(checked):
    # FIX_FIRST["apart"]: no note sends the student to Part 1, and the causal check names the convention.
    code, rows, output = checked["apart"]
    assert code == 1 and "float64" in rows["1"] and "Hint: it is the inverted mask" in rows["2"], output
    assert "fix that first" not in output, output
    # Unscaled scores: Part 2's attention checks call scaled_scores and fail with it.
    code, rows, output = checked["through"]
    note = "Part 2's failing checks call your scaled_scores (Part 1), which fails its own checks: fix that first."
    assert note in output, output
    # An inverted causal mask: Part 5's causal checks reach it through scaled_dot_product_attention and apply_mask,
    # which pass their own checks that use no causal mask; the note names causal_mask alone.
    code, rows, output = checked["inverted"]
    note = "Part 5's failing checks call your causal_mask (Part 2), which fails its own checks: fix that first."
    assert note in output, output


OWN_TESTS = '''
import pytest

from student import split_heads


def test_mine_that_passes():
    assert split_heads is not None


def test_mine_that_fails():
    assert 1 + 1 == 3, "my own check of arithmetic"


@pytest.mark.part3
def test_mine_for_part3():
    assert False, "my part 3 check"
'''


@pytest.mark.slow
def test_the_students_own_checks_are_run_and_reported(tmp_path):
    folder = write_submission(tmp_path / "own")
    (folder / "student" / "tests" / "test_mine.py").write_text(OWN_TESTS)
    code, rows, output = check_table(folder)
    assert code == 1, output
    assert "your own checks" in rows["-"] and "1/2" in rows["-"] and "my own check of arithmetic" in rows["-"], output
    assert "6/7" in rows["3"] and "my part 3 check" in rows["3"], output   # counted in its part
    code, rows, output = check_table(folder, "--part", "3")
    assert code == 1 and "-" not in rows and "my part 3 check" in rows["3"], output
    (folder / "student" / "tests" / "test_mine.py").write_text("import no_such_module\n")
    code, rows, output = check_table(folder)
    assert code == 1 and "test_mine.py: could not load the checks" in rows["-"], output
    assert "no_such_module" in rows["-"], output


@pytest.mark.slow
def test_the_notebook_check_shows_what_went_to_stderr(tmp_path):
    folder = write_submission(tmp_path / "noisy")
    init = folder / "student" / "__init__.py"
    init.write_text(init.read_text() + '\nimport sys\nprint("a note from your __init__", file=sys.stderr)\n')
    code = "from student.check import check_in_fresh_process; print(check_in_fresh_process(1))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(folder)}, timeout=SAFETY_NET_S)
    assert "All selected checks pass." in proc.stdout, proc.stdout + proc.stderr
    assert "Printed on stderr" in proc.stdout and "a note from your __init__" in proc.stdout, proc.stdout


def _reason(raise_it) -> str:
    with pytest.raises(Exception) as excinfo:
        raise_it()
    return plain_reason(excinfo)


def test_only_the_stubs_own_error_reads_not_implemented_yet():
    def stub():
        raise NotImplementedError("Part 2: causal_mask is not implemented yet")

    def pytorch_refuses():
        return torch.ones(2) & torch.ones(2)   # NotImplementedError: "bitwise_and_cpu" not implemented for 'Float'

    assert _reason(stub) == "not implemented yet (Part 2: causal_mask is not implemented yet)"
    reason = _reason(pytorch_refuses)
    assert reason.startswith("NotImplementedError: ") and "not implemented yet" not in reason, reason


def test_every_generated_stub_raises_the_message_the_checks_recognise():
    messages = [line.split('NotImplementedError("', 1)[1].rsplit('")', 1)[0]
                for text in generated_stubs().values() for line in text.splitlines() if "NotImplementedError(" in line]
    assert len(messages) == 11 and all(is_stub_message(m) for m in messages), messages
    assert is_stub_error(NotImplementedError(messages[0])) and not is_stub_error(RuntimeError(messages[0]))


def test_check_values_reports_nan_and_never_crashes_on_it():
    expected = torch.tensor([[1.0, float("nan")], [0.5, 0.25]])
    helpers.check_values(expected.clone(), expected, "f(x)")   # NaN matches NaN only
    with pytest.raises(AssertionError, match=r"f\(x\) holds nan at index \(1, 0\) \(expected 0.5000\)"):
        helpers.check_values(torch.tensor([[1.0, float("nan")], [float("nan"), 0.25]]), expected, "f(x)")
    with pytest.raises(AssertionError, match=r"at index \(0, 1\): got 2.0000, expected nan"):
        helpers.check_values(torch.tensor([[1.0, 2.0], [0.5, 0.25]]), expected, "f(x)")
    with pytest.raises(AssertionError, match=r"f\(x\) returned shape \(2,\), expected \(2, 2\)"):
        helpers.check_values(torch.ones(2), expected, "f(x)")
    with pytest.raises(AssertionError, match="should return a tensor, got tuple"):
        helpers.check_values((torch.ones(2, 2),), expected, "f(x)")


def test_a_mask_check_demands_a_bool_tensor():
    lower = torch.ones(3, 3).tril()
    with pytest.raises(AssertionError, match=r"returned dtype torch\.float32, expected torch\.bool"):
        helpers.check_mask(lower, lower.bool(), "causal_mask(3)")
    with pytest.raises(AssertionError, match=r"wrong at 3 of 9 positions, first at index \(0, 1\): got True"):
        helpers.check_mask(torch.ones(3, 3, dtype=torch.bool), lower.bool(), "causal_mask(3)")


def test_the_plain_pytorch_oracle_of_the_checks_matches_the_reference_module():
    from assignment.reference.multihead import MultiHeadAttention

    torch.manual_seed(0)
    module = MultiHeadAttention(12, 3).double().eval()
    x, context = torch.randn(2, 5, 12, dtype=torch.float64), torch.randn(2, 7, 12, dtype=torch.float64)
    real = torch.tensor([[True] * 7, [True] * 3 + [False] * 4])
    for inputs in ({}, {"is_causal": True}, {"context": context, "padding_mask": real},
                   {"padding_mask": real[:, :5], "is_causal": True}):
        torch.testing.assert_close(helpers.pytorch_attention(module, 3, x, **inputs), module(x, **inputs))


@pytest.mark.slow
def test_a_pytest_configuration_around_the_handout_does_not_change_the_counts(tmp_path):
    # `-ra` needs pytest's terminal plugin (which the table switches off) and `-x` would stop at the first failure.
    folder = write_submission(tmp_path / "configured", solution=False)
    (folder / "pytest.ini").write_text("[pytest]\naddopts = -x -ra\n")
    code, rows, output = check_table(folder)
    assert code == 1 and "could not run" not in output, output
    assert all(re.search(r"  0/([2-9]|\d\d)  ", rows[str(part)]) for part in range(1, 7)), output
