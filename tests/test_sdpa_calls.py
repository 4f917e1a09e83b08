"""The fused path's rule decided by its SDPA call (grader/gateway/sdpa_calls.py): the arguments the watch records
are held against the graded call's, in any equivalent form, and a call on other inputs satisfies nothing.

The attacks (autograder/adversarial/sdpa_calls.py, and the zoo's SDPA call on a slice) are shown losing the fused
tests with the check on, and passing them unflagged with it switched off.
"""
import sys

import pytest
import torch

from autograder.adversarial.sdpa_calls import ATTACKS, overrides
from autograder.samples import edited_reference, write_submission
from autograder.zoo.bugs import BUGS
from grader.gateway import ModuleSpec, sdpa_calls
from grader.gateway.local import LocalGateway
from grader.wire import executor
from grading_tests import oracle, test_part6_parity
from grading_tests.module_checks import case_inputs

THROWN_AWAY = "fused-sdpa-output-thrown-away"
FORGETS_OUT_BIAS = "forgets-out-proj-bias"
SPLIT_BUG = "split-without-transpose"   # Part 3: wrong heads reach the fused path's SDPA call


@pytest.fixture(scope="module")
def gateways(tmp_path_factory):
    """The reference, the attacks and a real mistake -> LocalGateway; sys.path and `student` restored afterwards."""
    saved_path = list(sys.path)
    saved = {n: m for n, m in sys.modules.items() if n == "student" or n.startswith("student.")}
    root = tmp_path_factory.mktemp("sdpa-calls")
    zoo = {bug.name: bug.overrides for bug in BUGS}
    sources = {"reference": {}, THROWN_AWAY: zoo[THROWN_AWAY], SPLIT_BUG: zoo[SPLIT_BUG],
               **{name: overrides(name) for name in ATTACKS},
               FORGETS_OUT_BIAS: edited_reference("multihead.py", "        return self.out_proj(merge_heads(heads))",
                                                  "        return merge_heads(heads) @ self.out_proj.weight.T")}
    made = {name: LocalGateway(write_submission(root / name, overrides=files)) for name, files in sources.items()}
    yield made
    sys.path[:] = saved_path
    for name in [n for n in sys.modules if n == "student" or n.startswith("student.")]:
        del sys.modules[name]
    sys.modules.update(saved)


# ---------------------------------------------------------------- the forms of one call

def graded_call():
    """A fused forward of the suite (causal, padded) and the SDPA problem the grader expects of it."""
    init_kwargs, state, forward = case_inputs("self-causal-padding", 5)
    spec = ModuleSpec({**init_kwargs, "fused": True}, state, forward)
    return spec, sdpa_calls.expected_call("fused", spec, "cpu").slices


def heads_of(spec):
    """q, k, v (B, H, L, D) as a correct path computes them in float32, and the padding as a (B, 1, L, S) mask."""
    x, state, H = spec.forward_kwargs["x"], spec.state_dict, spec.init_kwargs["num_heads"]
    q, k, v = (oracle.split(x @ state[f"{p}.weight"].T + state[f"{p}.bias"], H) for p in ("q_proj", "k_proj",
                                                                                                 "v_proj"))
    L = x.size(1)
    return q, k, v, oracle.expand(spec.forward_kwargs["padding_mask"], L)


def call(q, k, v, attn_mask=None, is_causal=False, **extra):
    return {"query": q, "key": k, "value": v, "attn_mask": attn_mask, "dropout_p": 0.0, "is_causal": is_causal,
            **extra}


def forms(spec):
    q, k, v, padding = heads_of(spec)
    L = q.size(-2)
    folded = padding & oracle.causal(L, L)
    additive = torch.zeros(folded.shape).masked_fill(~folded, float("-inf"))
    finfo = (~folded).float() * torch.finfo(torch.float32).min
    D = q.size(-1)
    return {
        "the reference's": [call(q, k, v, folded)],
        "is_causal beside the padding mask": [call(q, k, v, padding, is_causal=True)],
        "an additive -inf mask": [call(q, k, v, additive)],
        "an additive finfo.min mask": [call(q, k, v, finfo)],
        "one call per head, in reverse order, queries scaled first": [
            call(q[:, h] * D ** -0.5, k[:, h], v[:, h], folded[:, 0], scale=1.0) for h in reversed(range(q.size(1)))],
        "one call per batch item": [call(q[b], k[b], v[b], folded[b]) for b in range(q.size(0))],
    }, {
        "a probe on ones": [call(*(torch.ones(1, 1, 1, 1),) * 3)],
        "a slice of the queries": [call(q[..., :1, :], k, v)],
        "the identity on other values": [call(torch.eye(L).expand(*q.shape[:-2], L, L), torch.eye(L).expand(
            *q.shape[:-2], L, L), v, scale=1e4)],
        "no mask": [call(q, k, v)],
        "the padding without causality": [call(q, k, v, padding)],
        "another dropout": [{**call(q, k, v, folded), "dropout_p": 0.1}],
        "one head left out": [call(q[:, h], k[:, h], v[:, h], folded[:, 0]) for h in range(1, q.size(1))],
        "keys for values": [call(q, k, k, folded)],
        "the default scale of the whole width": [call(q, k, v, folded, scale=(q.size(1) * D) ** -0.5)],
        "not a call": [{"query": "q"}, 3],
    }


def test_every_equivalent_form_of_the_graded_call_satisfies_the_rule_and_other_inputs_do_not():
    spec, expected = graded_call()
    right, wrong = forms(spec)
    for name, calls in right.items():
        assert sdpa_calls.covers(calls, expected, torch.float32), name
    for name, calls in wrong.items():
        assert not sdpa_calls.covers(calls, expected, torch.float32), name
        assert sdpa_calls.covers(calls + right["the reference's"], expected, torch.float32), name


def test_the_watch_records_each_sdpa_calls_arguments_as_cpu_copies():
    q = torch.randn(1, 2, 3, 4)
    seen, calls = [], []
    with executor.watching_attention(seen, calls):
        torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True, scale=0.5)
        torch.nn.functional.scaled_dot_product_attention(q, q, q, None, 0.0)
    assert seen == ["scaled_dot_product_attention"] and len(calls) == 2
    assert torch.equal(calls[0]["query"], q) and calls[0]["query"] is not q
    assert calls[0]["is_causal"] is True and calls[0]["scale"] == 0.5
    assert calls[1]["attn_mask"] is None and calls[1]["dropout_p"] == 0.0


# ---------------------------------------------------------------- the rule in the suite's tests

def fused_tests(student):
    """Three fused tests of the suite, on forward (float32, float16) and on the fused step alone."""
    test_part6_parity.test_fused_agrees_with_float64_math(student, "self-causal-padding")
    test_part6_parity.test_fused_low_precision(student, torch.float16)
    test_part6_parity.test_fused_attention_step_alone_with_more_keys_than_queries(student, None)


@pytest.mark.parametrize("name", [THROWN_AWAY, *ATTACKS])
def test_a_fused_path_whose_sdpa_calls_miss_the_graded_call_breaks_the_rule(gateways, monkeypatch, name):
    reference, attack = gateways["reference"], gateways[name]
    for student in (reference, attack):
        student.forbidden.clear()
        student.test = f"t::{name}"
        fused_tests(student)   # right values on both
    assert reference.forbidden == {}
    assert attack.forbidden == {f"t::{name}": sdpa_calls.WHY}
    # The defence off: every SDPA call taken for the graded one, and the attack passes unflagged.
    attack.forbidden.clear()
    monkeypatch.setattr(sdpa_calls, "covers", lambda *args: True)
    fused_tests(attack)
    assert attack.forbidden == {}


def test_a_mistake_outside_the_sdpa_call_fails_the_same_way_on_every_run(gateways):
    """A module that forgets out_proj's bias: a mark drawn afresh per call once let the float16 test pass or fail
    from one run to the next. Nothing drawn at random decides it now: it fails every time."""
    student = gateways[FORGETS_OUT_BIAS]
    for _ in range(3):
        with pytest.raises(AssertionError, match="output"):
            test_part6_parity.test_fused_low_precision(student, torch.float16)


def test_a_mistake_before_the_call_is_charged_by_the_values_and_never_flagged_as_a_cheat(gateways, monkeypatch):
    """Wrong heads (a Part 3 bug) make the fused path's SDPA call another than the graded one, honestly: its output
    is wrong, so the values decide, and the property tests its values do not enter keep their points unflagged.
    Held to the call alone (the output's check off), the same bug would be charged and flagged as a cheat."""
    student = gateways[SPLIT_BUG]

    def run():
        student.forbidden.clear()
        student.test = f"t::{SPLIT_BUG}"
        with pytest.raises(AssertionError, match="output"):
            test_part6_parity.test_fused_agrees_with_float64_math(student, "self-causal-padding")
        test_part6_parity.test_fused_runs_on_the_inputs_device(student, student.second_device)
        return dict(student.forbidden)

    assert run() == {}
    monkeypatch.setattr(sdpa_calls, "_right", lambda *args: True)
    assert run() == {f"t::{SPLIT_BUG}": sdpa_calls.WHY}
