"""The parts of the assignment: their numbers, titles and the graded names in each.

The local checks (student.check) print their table in this order.
"""
PARTS = {
    1: ("Scaling", ("scaled_scores",)),
    2: ("Masking and attention weights", ("causal_mask", "padding_mask", "apply_mask", "scaled_dot_product_attention")),
    3: ("Splitting and merging heads", ("split_heads", "merge_heads")),
    4: ("Padding-mask expansion", ("expand_padding_mask",)),
    5: ("Multi-head and cross-attention", ("MultiHeadAttention.__init__", "MultiHeadAttention.forward")),
    6: ("Parity with PyTorch's fused SDPA", ("MultiHeadAttention._fused_attention",)),
}


def part_of(qualname: str) -> int:
    """The part a graded function or method belongs to."""
    for number, (_title, names) in PARTS.items():
        if qualname in names:
            return number
    raise KeyError(f"{qualname} belongs to no part")
