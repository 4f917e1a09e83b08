"""A fused path's output must come from its SDPA call (grader/gateway/provenance.py), decided from the numbers.

Every fused-path call runs with what F.scaled_dot_product_attention returns multiplied by a mark the trusted side
draws, and the mark is taken out before the test sees the result: an honest path comes out as it would unmarked (to
about one unit in the last place, in every dtype), a path that computes its answer beside the call comes out wrong.
"""
import sys

import pytest
import torch

from autograder.samples import write_submission
from autograder.zoo.bugs import BUGS
from grader.gateway import CallOptions, ModuleSpec, provenance
from grader.gateway.local import LocalGateway
from grader.wire import executor
from grading_tests import test_part6_parity
from grading_tests.module_checks import case_inputs

THROWN_AWAY = "fused-sdpa-output-thrown-away"


@pytest.fixture(scope="module")
def gateways(tmp_path_factory):
    """"reference" and the bug -> LocalGateway; sys.path and the imported `student` are restored afterwards."""
    saved_path = list(sys.path)
    saved = {n: m for n, m in sys.modules.items() if n == "student" or n.startswith("student.")}
    root = tmp_path_factory.mktemp("provenance")
    bug = next(sample for sample in BUGS if sample.name == THROWN_AWAY)
    made = {"reference": LocalGateway(write_submission(root / "reference")),
            THROWN_AWAY: LocalGateway(write_submission(root / THROWN_AWAY, overrides=bug.overrides))}
    yield made
    sys.path[:] = saved_path
    for name in [n for n in sys.modules if n == "student" or n.startswith("student.")]:
        del sys.modules[name]
    sys.modules.update(saved)


def fused_spec(dtype, method="forward"):
    init_kwargs, state, forward = case_inputs("self-causal-padding", seed=5, dtype=torch.float32)
    forward["x"] = forward["x"].to(dtype)
    if method != "forward":   # the fused step alone: heads (B, H, L, D) and its own arguments
        B, L, E = forward["x"].shape
        q = forward["x"].reshape(B, L, 3, E // 3).transpose(1, 2)
        forward = {"q": q, "k": q.flip(2), "v": q * 2, "mask": None, "is_causal": True, "dropout_p": 0.0}
    return ModuleSpec({**init_kwargs, "fused": True}, state, forward, method=method, dtype=dtype)


def test_calls_whose_mark_could_not_come_out_exactly_are_not_marked():
    spec = fused_spec(torch.float32)
    assert provenance.marked_options("fused", spec, CallOptions()).sdpa_mark in provenance.MARKS
    assert provenance.marked_options("fused", spec, CallOptions(device="emulated:0")).sdpa_mark in provenance.MARKS
    for device in ("meta", "cuda", "cuda:1"):   # no values; PyTorch's own kernels' tolerances
        assert provenance.marked_options("fused", spec, CallOptions(device=device)).sdpa_mark is None
    assert provenance.marked_options("fused", ModuleSpec(spec.init_kwargs, None, spec.forward_kwargs),
                                     CallOptions()).sdpa_mark is None   # out_proj.bias unknown
    assert provenance.marked_options("manual", spec, CallOptions()).sdpa_mark is None


def test_the_sandbox_multiplies_only_sdpas_output_by_the_mark():
    q = torch.randn(1, 2, 3, 4)
    seen: list[str] = []
    with executor.watching_attention(seen, -8.0):
        marked = torch.nn.functional.scaled_dot_product_attention(q, q, q)
        softmax = torch.softmax(q, -1)
    assert torch.equal(marked, -8.0 * torch.nn.functional.scaled_dot_product_attention(q, q, q))
    assert torch.equal(softmax, torch.softmax(q, -1))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("method", ["forward", "_fused_attention"])
def test_an_honest_fused_path_comes_out_as_it_would_unmarked(gateways, dtype, method):
    student = gateways["reference"]
    spec = fused_spec(dtype, method)
    assert provenance.marked_options("fused" if method == "forward" else "fused-step", spec,
                                     CallOptions()).sdpa_mark in provenance.MARKS
    grads = (torch.randn(spec.forward_kwargs["x" if method == "forward" else "q"].shape),)
    options = CallOptions(seed=3, grad_outputs=grads)
    unmarked = student._run_module(spec, options)   # as the student's code answers with no mark at all
    for _ in range(3):   # three draws of the mark
        marked = student.run_module(spec, options)
        limit = 2 * torch.finfo(dtype).eps
        pairs = [("output", marked.output, unmarked.output)]
        pairs += [(f"gradient of {n}", g, {**unmarked.input_grads, **(unmarked.param_grads or {})}[n])
                  for n, g in {**marked.input_grads, **(marked.param_grads or {})}.items() if g is not None]
        for what, got, want in pairs:
            scale = want.double().abs().max().item()
            torch.testing.assert_close(got.double(), want.double(), rtol=0, atol=limit * scale, msg=what)


def verdict(student) -> str:
    try:
        test_part6_parity.test_fused_agrees_with_float64_math(student, "self-padding")
    except AssertionError:
        return "fails"
    return "passes"


def test_a_fused_path_that_throws_sdpas_output_away_fails_on_its_values(gateways, monkeypatch):
    assert verdict(gateways["reference"]) == "passes"
    assert verdict(gateways[THROWN_AWAY]) == "fails"
    # The defence off: no mark, and the path that computes beside its SDPA call passes as an honest one.
    monkeypatch.setattr(provenance, "marked_options", lambda path, spec, options: options)
    assert verdict(gateways[THROWN_AWAY]) == "passes"


def test_a_fused_path_whose_output_ignores_sdpa_breaks_the_rule_in_every_test_that_ran_it(gateways, monkeypatch):
    """Where SDPA's output is zero (a sequence with no real token) no mark shows, and the path that throws SDPA's
    output away passes the test that looks only there. Asked again under another mark, that path answers the same
    to the bit, and the gateway says so: the suite then charges every test that ran the fused path (suite.py)."""
    empty_rows = test_part6_parity.test_fused_sequence_with_no_real_token_gets_no_attention
    for name, ignoring in (("reference", ""), (THROWN_AWAY, provenance.IGNORED)):
        student = gateways[name]
        student.ignoring, student._provenance_asked, student.test = "", False, f"t::{name}"
        empty_rows(student)   # passes for both: its values are right where it looks
        assert student.ignoring == ignoring and f"t::{name}" in student.fused_tests
    # The defence off: no second mark is asked for, nothing is found, and the test would earn its points.
    student = gateways[THROWN_AWAY]
    student.ignoring, student._provenance_asked = "", False
    monkeypatch.setattr(type(student), "_ask_provenance", lambda *args: None)
    empty_rows(student)
    assert student.ignoring == ""
