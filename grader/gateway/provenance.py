"""Whether a fused path's output comes from its SDPA call, decided from the numbers on the trusted side.

The handout's fused path computes its attention with F.scaled_dot_product_attention. Watching for
that call is not enough: a path can call SDPA on a slice it throws away and compute its answer some
other way (the watch sees the call, the rule is satisfied), and any watch in the student's process
can be switched off. So each fused-path call the grader makes asks the sandbox to multiply whatever
SDPA returns by a mark m, drawn by the trusted side afresh for every call from MARKS; the sandbox
can learn m only from SDPA's own output.

A path whose output is out_proj(merge_heads(SDPA(...))), as the handout's is, then returns
    out_proj.bias + m * (its honest output - out_proj.bias),
and the gradients of everything before SDPA, and of out_proj.weight, are m times their honest values
(out_proj.bias's is unchanged). The grader takes m back out (unmarked) before any test sees the
result. m is a power of two, so the multiplication is exact in every floating-point type; taking it
out costs at most about one unit in the last place of the output. A path that threw SDPA's output
away returns its own numbers unmoved, and with the mark taken out they are wrong: every fused test
it runs fails on its values, as a path that never called SDPA fails by the forbidden-call rule.

Where SDPA's output is zero (a query that sees no key) no mark can show: a path that ignores SDPA's output
comes out right there. So the first marked call of a run is asked again under another mark
(ignores_sdpa): a path whose output is the same to the bit under two marks, where an honest one would
have moved, does not use SDPA's output at all, and every test that ran the fused path breaks the
forbidden-call rule, as a path that never called SDPA does.

Calls the mark cannot be taken out of exactly are not marked: a module run without weights given
(the grader does not know its out_proj.bias), and calls on a device whose results come back as
meta (no values). Nor are calls on a GPU: their tolerances are those of PyTorch's own fused kernels
(grading_tests/lowp_tolerance.py), calibrated without a mark, and the CPU's marked calls have
decided already whether the path uses SDPA's output (the rule then charges the GPU's tests too).
"""
from __future__ import annotations

import dataclasses
import secrets

import torch

from grader.wire.executor import CallOptions, ModuleSpec

# The handout fixes the module's parameters (q_proj, k_proj, v_proj, out_proj and nothing else): the output
# projection's bias is the only part of the output that does not pass through SDPA.
OUTPUT_BIAS = "out_proj.bias"
# Powers of two: exact to apply and to take out; large enough that taking the mark out of a low-precision output
# adds at most about one unit in its last place (the bias is small beside m times the attention), small enough
# that float16 does not overflow.
MARKS = (-32.0, -16.0, -8.0, 8.0, 16.0, 32.0)
MARKED_PATHS = ("fused", "fused-step")
UNMARKED_DEVICES = ("meta", "cuda")
IGNORED = ("the fused path's output does not come from its F.scaled_dot_product_attention call (it stayed the same "
           "to the bit when the grader rescaled that call's output), which it must go through")


def marked_options(path: str | None, spec: ModuleSpec, options: CallOptions) -> CallOptions:
    """options with a fresh mark for SDPA's output when the call runs a fused path the mark can be taken out of;
    options as they are otherwise."""
    if path not in MARKED_PATHS or options.sdpa_mark is not None or options.device.split(":")[0] in UNMARKED_DEVICES:
        return options
    if path == "fused" and spec.state_dict is None:
        return options
    return dataclasses.replace(options, sdpa_mark=secrets.choice(MARKS))


def another_mark(options: CallOptions) -> CallOptions:
    """The same call's options under another mark than theirs."""
    return dataclasses.replace(options, sdpa_mark=secrets.choice([m for m in MARKS if m != options.sdpa_mark]))


def ignores_sdpa(path: str, spec: ModuleSpec, first, second) -> bool:
    """Whether two answers of one fused call under two different marks show a path that ignores SDPA's output:
    the same to the bit, and not what a path whose attention is zero everywhere gives (out_proj.bias alone, or
    zeros from the fused step), where an honest path does not move either."""
    one, other = first.output, second.output
    if not (isinstance(one, torch.Tensor) and isinstance(other, torch.Tensor) and one.is_floating_point()):
        return False
    if not torch.equal(one, other):
        return False
    at_rest = _output_bias(spec) if path == "fused" else 0.0
    return not torch.equal(one.double(), torch.as_tensor(at_rest, dtype=torch.float64).expand(one.shape))


def unmark(result, path: str, spec: ModuleSpec, mark: float) -> None:
    """Take the mark out of a marked call's result, in place (the tensors keep what the wire said of them)."""
    output = result.output
    if output is None or not output.is_floating_point():
        return
    bias = _output_bias(spec) if path == "fused" else 0.0
    output.copy_(((output.double() - bias) / mark + bias).to(output.dtype))
    for grad in (result.input_grads or {}).values():
        _divide(grad, mark)
    for name, grad in (result.param_grads or {}).items():
        if name != OUTPUT_BIAS:
            _divide(grad, mark)


def _output_bias(spec: ModuleSpec):
    bias = (spec.state_dict or {}).get(OUTPUT_BIAS)
    if bias is None:   # bias=False: nothing is added after SDPA
        return 0.0
    return bias.to(spec.dtype or bias.dtype).double()


def _divide(grad, mark: float) -> None:
    if isinstance(grad, torch.Tensor) and grad.is_floating_point():
        grad.copy_((grad.double() / mark).to(grad.dtype))
