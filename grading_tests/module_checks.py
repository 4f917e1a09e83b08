"""Checks shared by Part 5 (MultiHeadAttention, manual path) and Part 6 (the fused path)."""
from __future__ import annotations

import torch

from grader.gateway import CallOptions, ModuleSpec, vector_jacobian
from grading_tests import oracle
from grading_tests.checks import (
    expect_close,
    expect_computed,
    expect_dtype,
    expect_shape,
    expect_tensor,
    fail,
    in_a_batch,
    randn,
    run_module,
)
from grading_tests.placement import run_module_placed
from grading_tests.second_opinions import Questions
from grading_tests.tolerance import agree

# (B, L, S or None for self-attention, E, H, lengths or None, is_causal, bias). Only "no-bias" has
# bias=False, so a module that ignores `bias` fails the tests about bias, not every test.
MODULE_CASES = {
    "self": (2, 5, None, 12, 3, None, False, True),
    "self-causal": (2, 6, None, 12, 4, None, True, True),
    "self-padding": (3, 7, None, 12, 2, [7, 3, 5], False, True),
    "self-causal-padding": (3, 8, None, 21, 3, [8, 4, 6], True, True),   # D = 7
    "cross": (2, 4, 7, 12, 3, None, False, True),
    "cross-padding": (3, 5, 9, 10, 5, [9, 2, 6], False, True),           # D = 2
    "one-query-one-head": (2, 1, 6, 7, 1, [6, 1], False, True),
    "long-odd": (1, 31, None, 14, 2, [31], True, True),
    "no-bias": (2, 6, 5, 12, 4, [5, 3], False, False),
}


def case_inputs(case: str, seed: int, dtype=torch.float32):
    """init kwargs, weights, forward kwargs of one MODULE_CASES entry (the grader's own copies)."""
    B, L, S, E, H, lengths, is_causal, bias = MODULE_CASES[case]
    forward = {"x": randn(B, L, E, seed=seed, dtype=dtype)}
    if S is not None:
        forward["context"] = randn(B, S, E, seed=seed + 1, dtype=dtype)
    if lengths is not None:
        forward["padding_mask"] = oracle.padding(lengths, S or L)
    if is_causal:
        forward["is_causal"] = True
    return {"embed_dim": E, "num_heads": H, "bias": bias}, oracle.random_state(E, bias, seed + 2), forward


def describe_forward(init_kwargs, forward, fused, training=False):
    parts = [f"x {tuple(forward['x'].shape)}"]
    if forward.get("context") is not None:
        parts.append(f"context {tuple(forward['context'].shape)}")
    if forward.get("padding_mask") is not None:
        parts.append(f"padding_mask {tuple(forward['padding_mask'].shape)}")
    if forward.get("is_causal"):
        parts.append("is_causal=True")
    dtype = str(forward["x"].dtype).removeprefix("torch.")
    return (f"MultiHeadAttention({init_kwargs['embed_dim']}, {init_kwargs['num_heads']}"
            f"{', bias=False' if init_kwargs.get('bias') is False else ''}"
            f"{', dropout=' + str(init_kwargs['dropout']) if init_kwargs.get('dropout') else ''}"
            f"{', fused=True' if fused else ''})({', '.join(parts)}) in {dtype}"
            f"{' in training mode' if training else ''}")


def expected_output(init_kwargs, state, forward):
    return oracle.mha(state, init_kwargs["num_heads"], forward["x"], forward.get("context"),
                      forward.get("padding_mask"), forward.get("is_causal", False))


def module_spec(init_kwargs, state, forward, *, fused=False, dtype=None, training=False) -> ModuleSpec:
    init = {**init_kwargs, "fused": True} if fused else dict(init_kwargs)
    return ModuleSpec(init_kwargs=init, state_dict=state, forward_kwargs=forward, dtype=dtype, training=training)


def module_output(student, init_kwargs, state, forward, *, fused=False, options=CallOptions(), training=False):
    """The student's forward output, values unchecked (for the tests of other properties)."""
    spec = module_spec(init_kwargs, state, forward, fused=fused, training=training)
    output = run_module(student, spec, options).output
    what = f"the output of {describe_forward(init_kwargs, forward, fused, training)}"
    expect_computed(output, forward["x"].shape, what)
    return output


def expect_same_output(got, reference, what: str, why: str):
    """The same module run two ways must give the same numbers (float32 rounding apart)."""
    expect_shape(got, reference.shape, what)
    if not agree(got, reference, atol=1e-5, rtol=1e-4):
        error = (got.double() - reference.double()).abs().nan_to_num(nan=float("inf")).max().item()
        fail(f"{what} differs from {why} (max abs difference {error:.3g})")


def check_module(student, init_kwargs, state, forward, *, fused=False, options=CallOptions(), dtype=None,
                 training=False):
    """Build, load the weights, run forward once and compare with the oracle; returns the ModuleResult."""
    spec = module_spec(init_kwargs, state, forward, fused=fused, dtype=dtype, training=training)
    result = run_module(student, spec, options)
    what = describe_forward(init_kwargs, forward, fused, training)
    x, context = forward["x"], forward.get("context")
    if context is not None and result.output is not None and result.output.shape == context.shape != x.shape:
        fail(f"the output of {what} has shape {tuple(result.output.shape)}, the shape of the context, expected "
             f"{tuple(x.shape)}. Hint: cross-attention roles swapped? Queries come from x, keys and values from "
             f"context")
    expect_shape(result.output, x.shape, f"the output of {what}")
    expect_dtype(result.output, x.dtype, f"the output of {what}")
    hints = oracle.mha_mistakes(state, init_kwargs["num_heads"], x, forward.get("context"),
                                forward.get("padding_mask"), forward.get("is_causal", False))
    expect_close(result.output, expected_output(init_kwargs, state, forward), f"the output of {what}", hints=hints)
    return result


def check_gradients(student, case, seed, *, fused=False):
    """Gradients of sum(out * upstream) for the inputs and all weights, against float64 autograd."""
    f64 = torch.float64
    init_kwargs, state, forward = case_inputs(case, seed, dtype=f64)
    state = {k: v.to(f64) for k, v in state.items()}
    upstream = randn(*forward["x"].shape, seed=seed + 5, dtype=f64)
    spec = module_spec(init_kwargs, state, forward, fused=fused, dtype=f64)
    result = run_module(student, spec, CallOptions(grad_outputs=(upstream,)))
    leaves = {k: v.clone().requires_grad_(True) for k, v in state.items()}
    inputs = {k: (v.clone().requires_grad_(True) if isinstance(v, torch.Tensor) and v.is_floating_point() else v)
              for k, v in forward.items()}
    out = oracle.mha(leaves, init_kwargs["num_heads"], inputs["x"], inputs.get("context"),
                     inputs.get("padding_mask"), inputs.get("is_causal", False))
    wanted = {**{k: v for k, v in inputs.items() if isinstance(v, torch.Tensor) and v.requires_grad}, **leaves}
    grads = dict(zip(wanted, vector_jacobian([out], [upstream], wanted.values()), strict=True))
    got = {**(result.input_grads or {}), **(result.param_grads or {})}
    for name, expected in grads.items():
        if got.get(name) is None:
            fail(f"no gradient reached {name}: keep the forward pass differentiable (no .detach(), no "
                 f"torch.no_grad(), no .item())")
        expect_close(got[name], expected, f"the gradient with respect to {name}")


def check_dropout_rate(student, *, fused, p=0.3, seed=3):
    """Make the output equal the dropped attention weights, then count the zeros.

    With q_proj = 0 every score is 0, so the weights are uniform, 1/S. With the context the
    identity and v_proj, out_proj the identity (one head, zero biases), out[b, i] = weights[b, i].
    The survivors are compared with the same module's output in eval mode, so only dropout is judged.
    """
    E = S = 16
    B, L = 4, 64
    eye = torch.eye(E)
    state = {"q_proj.weight": torch.zeros(E, E), "k_proj.weight": eye.clone(), "v_proj.weight": eye.clone(),
             "out_proj.weight": eye.clone(), **{f"{name}.bias": torch.zeros(E) for name in ("q_proj", "k_proj",
                                                                                              "v_proj", "out_proj")}}
    forward = {"x": randn(B, L, E, seed=400), "context": eye.expand(B, S, E).clone()}
    init = {"embed_dim": E, "num_heads": 1, "dropout": p, **({"fused": True} if fused else {})}
    what = f"MultiHeadAttention(16, 1, dropout={p}{', fused=True' if fused else ''}) in training mode"
    spec = ModuleSpec(init_kwargs=init, state_dict=state, forward_kwargs=forward, training=True)
    out = expect_tensor(run_module(student, spec, CallOptions(seed=seed)).output, f"the output of {what}").double()
    expect_shape(out, (B, L, E), f"the output of {what}")
    eval_spec = ModuleSpec(init_kwargs=init, state_dict=state, forward_kwargs=forward, training=False)
    evaluated = run_module(student, eval_spec, CallOptions(seed=seed)).output.double()
    eval_what = what.replace("training", "eval")
    expect_shape(evaluated, (B, L, E), f"the output of {eval_what}")
    dropped_in_eval = int((evaluated.abs() < 1e-6).sum())
    if dropped_in_eval:
        fail(f"{eval_what} zeroed {dropped_in_eval} attention weights: drop weights only when self.training is True")
    dropped = out.abs() < 1e-6
    rate = dropped.double().mean().item()
    if not p - 0.05 <= rate <= p + 0.05:
        extra = ""
        if rate == 0:
            extra = ": no weight was dropped; in training mode apply dropout with probability `dropout`"
        elif abs(rate - (1 - p)) <= 0.05:
            extra = " (did you pass the keep probability 1 - p?)"
        fail(f"{what} dropped {rate:.1%} of the attention weights, expected about {p:.0%}{extra}")
    survivors = out[~dropped]
    expect_close(survivors, evaluated[~dropped] / (1 - p),
                 f"the surviving attention weights of {what}, against the same weights in eval mode",
                 dtype=torch.float32,
                 hints=[("the survivors were not divided by 1 - dropout (F.dropout rescales them)",
                         lambda: evaluated[~dropped])])


def lesson_state():
    """The lesson's one-head, no-bias weights (notebook 004) with an identity output projection."""
    w_q = torch.tensor([[0.5406, -0.1657], [0.5869, 0.6496]]).T
    w_k = torch.tensor([[-0.1549, -0.3443], [0.1427, 0.4153]]).T
    w_v = torch.tensor([[0.6233, 0.6146], [-0.5188, 0.1323]]).T
    return {"q_proj.weight": w_q.contiguous(), "k_proj.weight": w_k.contiguous(), "v_proj.weight": w_v.contiguous(),
            "out_proj.weight": torch.eye(2)}


LESSON_TOKENS = torch.tensor([[[1.16, 0.23], [0.57, 1.36], [4.41, -2.16]]])
LESSON_SELF = torch.tensor([[1.0100, 1.0641], [0.2040, 0.7057], [3.4989, 2.2427]], dtype=torch.float64)
LESSON_CAUSAL = torch.tensor([[0.6038, 0.7434], [-0.0062, 0.6072], [3.4989, 2.2427]], dtype=torch.float64)


def check_lesson(student, *, fused):
    """The lesson's sentence as item 0 of a batch of random ones (a table of the printed answers fails it)."""
    init = {"embed_dim": 2, "num_heads": 1, "bias": False}
    for is_causal, printed in ((False, LESSON_SELF), (True, LESSON_CAUSAL)):
        forward = {"x": in_a_batch(LESSON_TOKENS[0], seed=17), **({"is_causal": True} if is_causal else {})}
        result = check_module(student, init, lesson_state(), forward, fused=fused)
        expect_close(result.output[0], printed, f"{'causal ' if is_causal else ''}self-attention of the lesson",
                     atol=2e-3, rtol=0)


def dropping_then_not(fused: bool, seed: int) -> Questions:
    """A second opinion (second_opinions.py): dropout=0.5 in eval mode, then the same module with dropout=0.0."""
    init_kwargs, state, forward = case_inputs("self-padding", seed)
    dropping = {**init_kwargs, "dropout": 0.5}
    return Questions(lambda student: module_output(student, dropping, state, forward, fused=fused,
                                              options=CallOptions(seed=1)),
                lambda student: module_output(student, init_kwargs, state, forward, fused=fused,
                                              options=CallOptions(seed=2)),
                context=f"the output of {describe_forward(dropping, forward, fused)} in eval mode")


def expect_no_dropout_in_eval_mode(opinions) -> None:
    """dropout=0.5 in eval mode gives what dropout=0.0 gives: the same module's numbers, whatever they are."""
    expect_same_output(opinions.first, opinions.second, opinions.context,
                       "the same module with dropout=0.0: outside training no weight may be dropped")


def check_empty_sequence(student, case, seed, lengths, *, fused):
    """A sequence with no real token: its queries see no key, so their attention weights are all zero and their
    output is out_proj of zeros (the bias), never NaN, never the mean of the values (an additive mask alone)."""
    init_kwargs, state, forward = case_inputs(case, seed)
    forward["padding_mask"] = oracle.padding(lengths, len(forward["padding_mask"][0]))
    output = module_output(student, init_kwargs, state, forward, fused=fused)
    nan = torch.isnan(output.double())
    if nan.any():
        fail(f"the output of {describe_forward(init_kwargs, forward, fused)} with padding lengths {lengths} has "
             f"{int(nan.sum())} NaN entries: a query with no real key gets all-zero weights, never NaN")
    empty = [b for b, n in enumerate(lengths) if n == 0]
    expected = expected_output(init_kwargs, state, forward)
    what = f"the output of sequence {empty[0]} (no real token) of {describe_forward(init_kwargs, forward, fused)}"
    uniform = ("matches equal weights over the padded keys: a query with no real key gets all-zero weights (as "
               "torch's SDPA gives), not the equal weights that a mask added to the scores leaves")
    expect_close(output[empty], expected[empty], what,
                 hints=[(uniform, lambda: oracle.mha(state, init_kwargs["num_heads"], forward["x"],
                                                     forward.get("context"), None, forward.get("is_causal", False),
                                                     scale=0.0)[empty])])


def check_placement(second: str, student, seed, *, fused):
    for case in ("self-causal-padding", "cross-padding"):
        init_kwargs, state, forward = case_inputs(case, seed)
        spec = module_spec(init_kwargs, state, forward, fused=fused)
        run_module_placed(second, student, spec, describe_forward(init_kwargs, forward, fused), forward["x"].shape)
