"""A property earns points only for a function that computes: the gate of each graded name.

A property test (dtype, device, non-mutation, rejection, invariance, parameters, dropout) holds for
anything of the right shape: a submission returning random or constant values of that shape, or
raising the contract's ValueErrors, would earn it without computing anything. So such a test is marked
`@pytest.mark.gated("name", ...)`, and before it runs each named function must give the oracle's values
on a basic case of its own (require). The basic case is drawn fresh for each test, from the test's id,
so no answer remembered from an earlier call passes it, and it is chosen so that a bug elsewhere rarely
fails it (an explicit scale of 1 with one feature, one head: the scaling and the heads' bugs of other
parts leave it right), so a gate costs points only in the tests of the function it gates.
"""
from __future__ import annotations

import os
import zlib

import torch

from grader.gateway import ModuleSpec
from grading_tests import oracle
from grading_tests.checks import call, expect_close, expect_equal, expect_pair, fail, randn, run_module

MODULE = "MultiHeadAttention"
FUSED_MODULE = "MultiHeadAttention(fused=True)"
_count = {"test": "", "calls": 0}


def fresh_seed() -> int:
    """A seed of its own for each gate of each test (the same in every run of the suite)."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
    if test != _count["test"]:
        _count.update(test=test, calls=0)
    _count["calls"] += 1
    return zlib.crc32(f"{test}#{_count['calls']}".encode()) % 1_000_000


def _integers(seed: int, low: int, high: int, count: int) -> list[int]:
    return torch.randint(low, high + 1, (count,), generator=torch.Generator().manual_seed(seed)).tolist()


def _scaled_scores(student, seed):
    e, = _integers(seed, 2, 7, 1)
    q, k = randn(2, 3, e, seed=seed), randn(2, 4, e, seed=seed + 1)
    scale = 0.3 + float(_integers(seed + 2, 0, 12, 1)[0]) / 10
    expect_close(call(student.scaled_scores, q, k, scale=scale).value, oracle.scores(q, k, scale),
                 f"scaled_scores(q {tuple(q.shape)}, k {tuple(k.shape)}, scale={scale:g})")


def _causal_mask(student, seed):
    length, keys = _integers(seed, 2, 6, 2)
    expect_equal(call(student.causal_mask, length, keys).value, oracle.causal(length, keys),
                 f"causal_mask({length}, {keys})")


def _padding_mask(student, seed):
    lengths = _integers(seed, 0, 5, 3)
    expect_equal(call(student.padding_mask, lengths, max_len=6).value, oracle.padding(lengths, 6),
                 f"padding_mask({lengths}, max_len=6)")


def _apply_mask(student, seed):
    """The kept scores unchanged, the hidden ones gone from the softmax (its value tests also ask for -inf or
    the dtype's most negative value: a large negative fill computes, it is only the wrong value)."""
    scores, keep = randn(2, 3, 4, seed=seed), randn(3, 4, seed=seed + 1) > 0
    keep[:, 0] = True
    got = call(student.apply_mask, scores, keep).value
    what = "apply_mask(scores (2, 3, 4), mask (3, 4))"
    expect_close(got.double().masked_fill(~keep, 0.0), scores.double().masked_fill(~keep, 0.0), what)
    expect_close(torch.softmax(got.double(), dim=-1), torch.softmax(scores.double().masked_fill(~keep, -torch.inf), -1),
                 f"the softmax of {what}")


def _attention(student, seed):
    length, keys, width = _integers(seed, 2, 5, 3)
    q, k, v = randn(length, 1, seed=seed), randn(keys, 1, seed=seed + 1), randn(keys, width, seed=seed + 2)
    output, weights = expect_pair(call(student.scaled_dot_product_attention, q, k, v, scale=1.0).value,
                                  "scaled_dot_product_attention")
    expected_output, expected_weights = oracle.attention(q, k, v, None, False, 1.0)
    what = f"scaled_dot_product_attention(q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, scale=1.0)"
    expect_close(weights, expected_weights, f"the weights of {what}")
    expect_close(output, expected_output, f"the output of {what}")


def _split_heads(student, seed):
    x = randn(2, 3, 6, seed=seed)
    expect_equal(call(student.split_heads, x, 3).value, oracle.split(x, 3), "split_heads(x (2, 3, 6), 3)")


def _merge_heads(student, seed):
    x = randn(2, 3, 4, 2, seed=seed)
    expect_equal(call(student.merge_heads, x).value, oracle.merge(x), "merge_heads(x (2, 3, 4, 2))")


def _expand_padding_mask(student, seed):
    mask = randn(2, 5, seed=seed) > 0
    expect_equal(call(student.expand_padding_mask, mask, 3).value, oracle.expand(mask, 3),
                 "expand_padding_mask(mask (2, 5), 3)")


def _module(fused: bool):
    def basic(student, seed):
        # One head of one feature: 1/sqrt(D) is 1, heads are split and merged trivially (other parts' bugs in
        # scaling and heads leave it right); self-attention without masks, in eval mode.
        state = oracle.random_state(1, True, seed)
        x = randn(2, 4, 1, seed=seed + 1)
        init = {"embed_dim": 1, "num_heads": 1, **({"fused": True} if fused else {})}
        output = run_module(student, ModuleSpec(init_kwargs=init, state_dict=state, forward_kwargs={"x": x})).output
        expect_close(output, oracle.mha(state, 1, x), f"the output of {FUSED_MODULE if fused else MODULE}(1, 1)(x)")
    return basic


BASIC_CASES = {
    "scaled_scores": _scaled_scores, "causal_mask": _causal_mask, "padding_mask": _padding_mask,
    "apply_mask": _apply_mask, "scaled_dot_product_attention": _attention, "split_heads": _split_heads,
    "merge_heads": _merge_heads, "expand_padding_mask": _expand_padding_mask,
    MODULE: _module(fused=False), FUSED_MODULE: _module(fused=True),
}


def require(student, *names: str) -> None:
    """Fail (the test that asked) unless every named function computes its basic case."""
    for name in names:
        try:
            BASIC_CASES[name](student, fresh_seed())
        except AssertionError as error:
            fail(f"not graded yet: this test checks a property of {name}, which earns points once {name} computes "
                 f"its results, and on a basic case it does not yet ({error}). Its value tests say what is wrong.")
