"""Fused paths that make an SDPA call without making the graded one (issue 48): the rule holds each SDPA call's
arguments against the graded call's (grader/gateway/sdpa_calls.py), so each earns what the fused path that never
calls SDPA earns ("bug-fused-path-is-manual", in escapes.py), and is flagged. tests/test_sdpa_calls.py shows each
scoring full marks, unflagged, with that check switched off.
"""
from __future__ import annotations

from autograder.adversarial.base import Context, Entry
from autograder.adversarial.expectations import Expectation
from autograder.samples import edited_reference, write_submission
from autograder.zoo.reference_lines import FUSED

MANUAL_HEADS = ("        heads = scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal, "
                "dropout_p=dropout_p)[0]\n")
# The manual answer times what SDPA returns for a 1x1x1x1 tensor of ones: 1, or whatever factor a grader that
# rescales SDPA's output puts on it, read back and applied.
PROBE = (MANUAL_HEADS +
         "        probe = torch.ones(1, 1, 1, 1, dtype=q.dtype, device=q.device)\n"
         "        return heads * F.scaled_dot_product_attention(probe, probe, probe)")
# The manual answer passed through SDPA as its values, under scores that make the weights the identity: SDPA's
# output is what the path returns, but not from the graded call's query, key and value.
IDENTITY = (MANUAL_HEADS +
            "        eye = torch.eye(q.size(-2), dtype=q.dtype, device=q.device).expand(*q.shape[:-2], -1, -1)\n"
            "        return F.scaled_dot_product_attention(eye, eye, heads, scale=1e4)")
FLAG = "does not come from its F.scaled_dot"
ATTACKS = {"cheat-sdpa-probe-of-its-output": PROBE, "cheat-sdpa-on-other-inputs": IDENTITY}


def overrides(name: str) -> dict[str, str]:
    return edited_reference("multihead.py", FUSED, ATTACKS[name])


def entries(_context: Context) -> list[Entry]:
    why = {"cheat-sdpa-probe-of-its-output": "the fused path computed by hand, times SDPA's answer for a 1x1x1x1 "
                                             "tensor of ones (a probe of any factor on SDPA's output)",
           "cheat-sdpa-on-other-inputs": "the fused path computed by hand, then passed through SDPA as its values "
                                         "under identity weights: SDPA's output, from other inputs"}
    return [Entry(Expectation(name, "cheat", "graded", why[name] + ": it earns what the path that never calls "
                              "SDPA earns", no_better_than="bug-fused-path-is-manual", flag=FLAG),
                  lambda dest, _c, name=name: write_submission(dest, overrides=overrides(name)))
            for name in ATTACKS]
