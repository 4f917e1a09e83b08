"""The parts of the assignment: their numbers, titles and the graded names in each.

The local checks (student.check) print their table in this order.
"""
import re

# Generated from the assignment's declaration: do not edit (your instructor's `python -m autograder generate`).
PARTS = {
    1: ("Scaling", ("scaled_scores",)),
    2: ("Masking and attention weights", ("causal_mask", "padding_mask", "apply_mask", "scaled_dot_product_attention")),
    3: ("Splitting and merging heads", ("split_heads", "merge_heads")),
    4: ("Padding-mask expansion", ("expand_padding_mask",)),
    5: ("Multi-head and cross-attention", ("MultiHeadAttention.__init__", "MultiHeadAttention.forward")),
    6: ("Parity with PyTorch's fused SDPA", ("MultiHeadAttention._fused_attention",)),
}

# What the grader can import besides Python's standard library: a module of yours that imports anything else
# fails to import there, and its functions score 0 (`python -m student.submit` warns about it).
GRADER_PACKAGES = ("numpy", "pytest", "torch")

# What every stub raises until it is written (the stubs are generated with exactly this text).
_STUB_MESSAGE = re.compile(r"Part (\d+): ([\w.]+) is not implemented yet")


def part_of(qualname: str) -> int:
    """The part a graded function or method belongs to."""
    for number, (_title, names) in PARTS.items():
        if qualname in names:
            return number
    raise KeyError(f"{qualname} belongs to no part")


def is_stub_message(text: str) -> bool:
    """True for the text a stub raises: "Part N: <name> is not implemented yet"."""
    return _STUB_MESSAGE.fullmatch(text) is not None


def is_stub_error(error: BaseException) -> bool:
    """True only for a stub's own `NotImplementedError("Part N: <name> is not implemented yet")`.

    PyTorch raises NotImplementedError too (an operation a dtype does not support, say): that
    is a real error in written code, not a part left to do.
    """
    return isinstance(error, NotImplementedError) and is_stub_message(str(error))
