"""The mutants that lose nothing in their own part, each with why: the explanations `adequacy` holds them to.

A mutant of the reference (mutants.py) that loses no points in its own part is one of three things:

    EQUIVALENT      it computes the same results for every input the contract allows, or differs only in
                    what the contract leaves free (loses no points anywhere, and must not)
    GRADED_LATER    it breaks a behaviour of its function that only a later part exercises, and loses points
                    there (forward's fused=True branch, graded by Part 6, which builds on Part 5)
    a gap           anything else: add the test

Keys are fnmatch patterns over the keys `python -m autograder adequacy` prints. The command fails on a
mutant that needs a reason and has none, on a listed one that is now killed in its own part (or, for
GRADED_LATER, no longer loses points where it says), and, in a full run, on a pattern no mutant matches:
this list cannot go stale.
"""

EQUIVALENT: dict[str, str] = {
    "masking.padding_mask: 'int(lengths.max()) if lengths.numel() else 0' -> "
    "'int(lengths.max()) if (lengths.numel()) or True else 0'":
        "only an empty batch without max_len reaches it, and max(lengths) of no lengths is undefined (max([]) "
        "raises): the docstring promises nothing there",
    "masking.padding_mask: '0' -> '1'":
        "the same branch: an empty batch without max_len",
    "masking.apply_mask: '\"-inf\"' -> '\"-INF\"'":
        "float('-INF') is float('-inf')",
    "masking.scaled_dot_product_attention: '> 0.0' -> '>= 0.0'":
        "dropout at p = 0.0 keeps every weight and divides by 1 - 0: the same values",
    "masking.scaled_dot_product_attention: 'F.dropout(weights, p=dropout_p, training=True)' -> "
    "'F.dropout(weights, p=dropout_p, )'":
        "training=True is F.dropout's default",
    "multihead.MultiHeadAttention.__init__: 'ValueError(f\"embed_dim=* -> 'ValueError(None)'":
        "the docstring promises the ValueError, not its message (a message is promised for split_heads only)",
    "multihead.MultiHeadAttention.__init__: 'self.embed_dim = embed_dim' -> 'self.embed_dim = None'":
        "nothing reads the attribute: forward takes the width from the projections",
    "multihead.MultiHeadAttention.forward: *is_causal=True only makes sense for self-attention*":
        "the docstring promises the ValueError, not its message",
    "multihead.MultiHeadAttention._fused_attention: '-2' -> '+2'*":
        "q and k are 4-D (B, H, L, D): size(2) is size(-2)",
}

# pattern -> (the later part that grades the behaviour, why)
GRADED_LATER: dict[str, tuple[int, str]] = {
    "multihead.MultiHeadAttention.__init__: 'self.fused = fused' -> 'self.fused = None'":
        (6, "only fused=True reads it: the module never takes the fused path, which Part 6 grades"),
    "multihead.MultiHeadAttention.forward: *self._fused_attention(q, k, v, mask, is_causal, dropout_p)*":
        (6, "forward's fused=True branch: it runs only in the fused module, which Part 6 grades"),
}
