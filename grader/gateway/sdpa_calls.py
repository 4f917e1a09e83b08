"""Whether a fused path made the SDPA call Part 6 teaches, decided on the trusted side from the call's arguments.

The handout's fused path hands F.scaled_dot_product_attention the query, key and value heads of the graded call,
with its mask, causality, scale and dropout. The sandbox's watch records the arguments of every SDPA call a graded
call makes (executor.sdpa_arguments); here they are held against what the grader's own arithmetic gives for that
call (expected_call: the projections of its inputs under its weights, split into heads), in any equivalent form:
the heads in one call or one call per head (or per batch item), a bool mask or an additive float one, causality as
is_causal or folded into the mask, the scale given or left to SDPA's default, or folded into the queries. Two forms
are equivalent where they give the same scores on every key a query may see (within the rounding of the call's
dtype), hide every other key (at least GAP below the row's largest visible score), take the same values and the
same dropout. A call on other inputs satisfies nothing: a path whose SDPA calls do not cover every head of the graded
call, and whose output is the graded call's answer all the same, breaks the forbidden-call rule (Gateway.note_module).
Where the output is wrong the values decide: a mistake before the call (in the heads, the mask) changes the call's
arguments too, and is charged by the tests it fails, never flagged as a cheat.

What this rests on: the record is made in the student's process, so code that forges it can evade the rule, and a
path that makes the right call and then throws its output away satisfies it (the output is graded as any other,
from the values). It is a rule about the call, observed in the box; the grade's values are decided from data.

Undecided (the rule then asks only that SDPA was called): a module run without weights given, and a call on the
meta device (its arguments hold no values).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from grader.wire.executor import ModuleSpec

WHY = ("the fused path's output does not come from its F.scaled_dot_product_attention call: no call was given the "
       "query, key and value heads of the graded call with its mask, causality, scale and dropout, which it must "
       "go through")
# A hidden key's score must lie this far below its row's largest visible one (a weight under e**-30 of it): -inf,
# finfo.min or -1e4 all do.
GAP = 30.0
# How far a recorded score or value may lie from the grader's float64 one, relative to the slice's largest: the
# rounding of projections computed in that dtype, with room (a call on other inputs misses by orders more).
TOLERANCE = {torch.float64: 1e-6, torch.float32: 1e-3, torch.float16: 2e-2, torch.bfloat16: 6e-2}


@dataclass(frozen=True)
class Slices:
    """Attention problems, one per leading index (batch item and head): scores (N, L, S) with the keys each query
    may see (N, L, S), values (N, S, Dv), and the dropout probability."""
    scores: torch.Tensor
    visible: torch.Tensor
    values: torch.Tensor
    dropout_p: float


@dataclass(frozen=True)
class Expected:
    """What the grader's arithmetic gives for a graded fused call: its SDPA problem, and its output in float64 (None
    where dropout draws) on the queries that see a key (`answered`, over the output's leading dims)."""
    slices: Slices
    output: torch.Tensor | None
    answered: torch.Tensor


def made_the_call(path: str, spec: ModuleSpec, device: str, recorded: list, output) -> bool:
    """The rule for one graded fused call: its recorded SDPA calls give the graded call's problem, or its output
    is not the right answer (then the values decide, and a mistake before the call, in the heads or the mask, is
    charged where it is wrong and never flagged as a cheat); True where it cannot be decided."""
    expected = expected_call(path, spec, device)
    if expected is None:
        return True
    working = spec.dtype or next((t.dtype for t in (spec.forward_kwargs or {}).values()
                                  if isinstance(t, torch.Tensor) and t.is_floating_point()), None)
    return covers(recorded, expected.slices, working) or not _right(output, expected, working)


def _tolerance(dtype: torch.dtype, working: torch.dtype | None) -> float:
    """The rounding a call in dtype may show, or its working dtype's where that is coarser."""
    return max(TOLERANCE.get(dtype, 0.1), TOLERANCE.get(working, 0.0) if working else 0.0)


def _right(output, expected: Expected, working: torch.dtype | None) -> bool:
    """Whether a fused call's output is the graded call's answer, within the rounding of its dtype (True where
    dropout makes the answer unknown)."""
    if expected.output is None:
        return True
    if not isinstance(output, torch.Tensor) or not output.is_floating_point() or output.shape != expected.output.shape:
        return False
    tolerance = _tolerance(output.dtype, working)
    got, want = output.double()[expected.answered], expected.output[expected.answered]
    return bool(((got - want).abs() <= tolerance * (want.abs().max() + 1 if want.numel() else 1)).all())


def expected_call(path: str, spec: ModuleSpec, device: str) -> Expected | None:
    """The graded fused call run on device, as the grader's arithmetic gives it, in float64 (None: undecided)."""
    kwargs = spec.forward_kwargs or {}
    if device.split(":")[0] == "meta":
        return None
    if path == "fused-step":
        try:
            q, k, v = (kwargs[name].double() for name in ("q", "k", "v"))
            mask, is_causal, dropout_p = kwargs.get("mask"), bool(kwargs["is_causal"]), float(kwargs["dropout_p"])
        except (KeyError, AttributeError, TypeError):
            return None
    else:
        state, x = spec.state_dict, kwargs.get("x")
        if state is None or not isinstance(x, torch.Tensor):
            return None
        heads = int(spec.init_kwargs["num_heads"])
        source = kwargs.get("context")
        source = x if source is None else source
        q, k, v = (_heads(_project(state, name, tensor, spec.dtype), heads)
                   for name, tensor in (("q_proj", x), ("k_proj", source), ("v_proj", source)))
        padding = kwargs.get("padding_mask")
        mask = None if padding is None else padding.bool()[:, None, None, :]
        is_causal = bool(kwargs.get("is_causal", False))
        dropout_p = float(spec.init_kwargs.get("dropout", 0.0)) if spec.training else 0.0
    L, S = q.size(-2), k.size(-2)
    visible = torch.ones(L, S, dtype=torch.bool)
    if is_causal:
        visible = visible.tril()
    if mask is not None:
        visible = visible & mask.bool()
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    seen = visible.expand(scores.shape)
    weights = torch.softmax(scores.masked_fill(~seen, -math.inf), -1).nan_to_num(0.0)
    output, answered = weights @ v, seen.any(-1)
    if path != "fused-step":
        B, H, L, D = output.shape
        weight, bias = (spec.state_dict or {}).get("out_proj.weight"), (spec.state_dict or {}).get("out_proj.bias")
        if weight is None:
            return None
        output = output.transpose(1, 2).reshape(B, L, H * D) @ _held(weight, spec.dtype).T
        output, answered = (output if bias is None else output + _held(bias, spec.dtype)), answered.all(1)
    return Expected(_flattened(scores, visible, v, dropout_p), None if dropout_p > 0 else output, answered)


def covers(recorded: list, expected: Slices, working: torch.dtype | None) -> bool:
    """Whether the recorded SDPA calls, together, give every slice of the expected problem (any order)."""
    left = torch.ones(expected.scores.size(0), dtype=torch.bool)
    for call in recorded:
        made = _recorded_slices(call)
        if made is None or abs(made.dropout_p - expected.dropout_p) > 1e-9:
            continue
        tolerance = _tolerance(made.values.dtype, working)
        for index in range(made.scores.size(0)):
            left &= ~_matching(made, index, expected, tolerance)
    return not left.any()


def _held(value: torch.Tensor, dtype) -> torch.Tensor:
    """A weight as the module holds it (in the module's dtype), in float64."""
    return (value.to(dtype) if dtype is not None else value).double()


def _project(state: dict, name: str, tensor: torch.Tensor, dtype) -> torch.Tensor:
    """tensor through the projection `name` as the module holds it, in float64."""
    out = tensor.double() @ _held(state[f"{name}.weight"], dtype).T
    bias = state.get(f"{name}.bias")
    return out if bias is None else out + _held(bias, dtype)


def _heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    B, L, E = x.shape
    return x.reshape(B, L, heads, E // heads).transpose(1, 2)


def _flattened(scores, visible, values, dropout_p) -> Slices:
    lead = torch.broadcast_shapes(scores.shape[:-2], visible.shape[:-2], values.shape[:-2])
    L, S = scores.shape[-2:]
    return Slices(scores.expand(*lead, L, S).reshape(-1, L, S), visible.expand(*lead, L, S).reshape(-1, L, S),
                  values.expand(*lead, *values.shape[-2:]).reshape(-1, *values.shape[-2:]), dropout_p)


def _recorded_slices(call) -> Slices | None:
    """One recorded call as Slices (scores with its mask and causality added), or None where its arguments are not
    a readable SDPA call (a record from the sandbox is data to check, not to trust)."""
    if not isinstance(call, dict):
        return None
    q: Any = call.get("query")
    k: Any = call.get("key")
    v: Any = call.get("value")
    mask: Any = call.get("attn_mask")
    dropout_p, is_causal, scale = call.get("dropout_p", 0.0), call.get("is_causal", False), call.get("scale")
    if not all(isinstance(t, torch.Tensor) and t.is_floating_point() and t.dim() >= 2 and t.device.type == "cpu"
               for t in (q, k, v)) or q.dtype != k.dtype or q.size(-1) != k.size(-1) or k.size(-2) != v.size(-2):
        return None
    if not (mask is None or (isinstance(mask, torch.Tensor) and mask.device.type == "cpu" and mask.dim() >= 2)):
        return None
    if type(dropout_p) not in (int, float) or type(is_causal) is not bool or call.get("enable_gqa", False):
        return None
    if not (scale is None or type(scale) in (int, float)):
        return None
    scale = 1 / math.sqrt(q.size(-1)) if scale is None else float(scale)
    try:
        scores = (q.double() @ k.double().transpose(-2, -1)) * scale
        L, S = scores.shape[-2:]
        if is_causal:
            scores = scores.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), -math.inf)
        if mask is not None:
            scores = (scores.masked_fill(~mask, -math.inf) if mask.dtype == torch.bool
                      else scores + mask.double())
        return _flattened(scores, torch.ones(1, 1, dtype=torch.bool), v.double(), float(dropout_p)) if \
            scores.dim() >= 2 else None
    except RuntimeError:   # shapes that do not broadcast: no SDPA call of these would run either
        return None


def _matching(made: Slices, index: int, expected: Slices, tolerance: float) -> torch.Tensor:
    """(N,) bool: which expected slices the recorded slice `index` gives."""
    scores, values = made.scores[index], made.values[index]
    if scores.shape != expected.scores.shape[1:] or values.shape != expected.values.shape[1:]:
        return torch.zeros(expected.scores.size(0), dtype=torch.bool)
    visible = expected.visible
    some = visible.any(-1, keepdim=True)   # rows with no visible key are left to the values
    size = expected.scores.masked_fill(~visible, 0).abs().amax((-2, -1), keepdim=True) + 1
    seen_ok = ((scores - expected.scores).abs() <= tolerance * size) | ~visible
    top = scores.masked_fill(~visible, -math.inf).amax(-1, keepdim=True)
    hidden_ok = visible | ~some | (scores <= top - GAP)
    value_size = expected.values.abs().amax((-2, -1), keepdim=True) + 1
    values_ok = ((values - expected.values).abs() <= tolerance * value_size).flatten(1).all(-1)
    return (seen_ok & hidden_ok).flatten(1).all(-1) & values_ok
