"""Assertions that explain a failure in plain words and name the call that gave the wrong result.

Each takes `what`, the call as the student wrote it (e.g. "causal_mask(3)"), and checks in the
order that explains best: a tensor at all, then its dtype, then its shape, then its values. None
of them crashes on a wrong result (NaN, a wrong shape, a tuple where a tensor was due): the
failure message says what came back instead.
"""
import torch


def t(values, dtype=torch.float32):
    """A tensor from nested lists, float32 unless told otherwise."""
    return torch.tensor(values, dtype=dtype)


def check_tensor(got, what):
    assert isinstance(got, torch.Tensor), f"{what} should return a tensor, got {type(got).__name__}"


def check_shape(got, expected_shape, what):
    check_tensor(got, what)
    assert tuple(got.shape) == tuple(expected_shape), (
        f"{what} returned shape {tuple(got.shape)}, expected {tuple(expected_shape)}"
    )


def check_dtype(got, expected_dtype, what, why=""):
    check_tensor(got, what)
    assert got.dtype == expected_dtype, (
        f"{what} returned dtype {got.dtype}, expected {expected_dtype}" + (f" ({why})" if why else "")
    )


def check_pair(result, what):
    """(output, weights) from scaled_dot_product_attention, or a message saying what came back."""
    assert isinstance(result, (tuple, list)) and len(result) == 2, (
        f"{what} should return a pair (output, weights), got "
        + (f"a {type(result).__name__} of length {len(result)}" if isinstance(result, (tuple, list))
           else f"a {type(result).__name__}")
    )
    output, weights = result
    check_tensor(output, f"{what}: output")
    check_tensor(weights, f"{what}: weights")
    return output, weights


def check_raises_value_error(call, what):
    """call() must raise ValueError; another exception, or none, fails with a message saying which."""
    try:
        call()
    except ValueError:
        return
    except Exception as error:
        raise AssertionError(f"{what} should raise ValueError, but raised {type(error).__name__}: {error}") from error
    raise AssertionError(f"{what} should raise ValueError, but returned normally")


def _index(flat_index: int, shape) -> tuple[int, ...]:
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat_index), tuple(shape)))


def check_mask(got, expected, what, hints=()):
    """A boolean mask: bool dtype (True = may attend), the expected shape, every entry equal.

    hints: (what the mistake is, the mask it gives) pairs; a wrong mask equal to one of them says so. The
    inverted mask (True where the key is hidden: what triu(diagonal=1) builds for a causal mask, the
    convention of some tutorials) is always recognised.
    """
    expected = torch.as_tensor(expected, dtype=torch.bool)
    check_dtype(got, torch.bool, what, "a mask is a bool tensor: True = may attend, False = hidden")
    check_shape(got, expected.shape, what)
    wrong = (got.cpu() != expected).flatten().nonzero().flatten()
    if wrong.numel():
        where = _index(int(wrong[0]), expected.shape)
        known = [*hints, ("it is the inverted mask: True must mean MAY attend, not hidden (a mask made with "
                          "triu(diagonal=1) marks what to hide)", ~expected)]
        hint = next((text for text, mask in known if torch.equal(got.cpu(), torch.as_tensor(mask))), None)
        raise AssertionError(
            f"{what} is wrong at {wrong.numel()} of {expected.numel()} positions, first at index {where}: "
            f"got {bool(got[where])}, expected {bool(expected[where])}" + (f". Hint: {hint}" if hint else "")
        )


def check_values(got, expected, what, atol=1e-4, rtol=1e-4):
    """A float result: the expected shape, then every entry within atol + rtol * |expected|.

    A NaN or inf where a number is expected is reported as such, with its index. A NaN in
    `expected` matches only a NaN.
    """
    expected = torch.as_tensor(expected)
    if expected.dtype == torch.bool:
        check_mask(got, expected, what)
        return
    check_shape(got, expected.shape, what)
    got64, exp64 = got.detach().cpu().double(), expected.detach().cpu().double()
    close = torch.isclose(got64, exp64, rtol=rtol, atol=atol, equal_nan=True)
    if bool(close.all()):
        return
    count = f"{int((~close).sum())} of {close.numel()}"
    not_finite = (~close & ~torch.isfinite(got64)).flatten().nonzero().flatten()
    if not_finite.numel():
        where = _index(int(not_finite[0]), got64.shape)
        raise AssertionError(
            f"{what} holds {got64[where].item()} at index {where} (expected {exp64[where].item():.4f}); "
            f"{count} entries are wrong"
        )
    error = torch.where(close, torch.zeros_like(got64), (got64 - exp64).abs())
    where = _index(int(error.flatten().argmax()), got64.shape)
    raise AssertionError(
        f"{what} differs from the expected value at {count} entries; the largest difference is at index {where}: "
        f"got {got64[where].item():.4f}, expected {exp64[where].item():.4f}"
    )


def pytorch_attention(module, num_heads, x, context=None, padding_mask=None, is_causal=False):
    """What torch.nn.MultiheadAttention computes with the four projections of your module.

    PyTorch's module keeps q, k and v's projections in one (3E, E) matrix and follows the other
    mask convention (True = hidden), hence the concatenation and the `~` below.
    """
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        assert isinstance(getattr(module, name, None), torch.nn.Linear), (
            f"MultiHeadAttention has no nn.Linear named {name}: the four projections must be q_proj, k_proj, "
            "v_proj and out_proj"
        )
    embed_dim, has_bias = x.size(-1), module.q_proj.bias is not None
    pytorch = torch.nn.MultiheadAttention(embed_dim, num_heads, bias=has_bias, batch_first=True, dtype=x.dtype)
    with torch.no_grad():
        pytorch.in_proj_weight.copy_(torch.cat([module.q_proj.weight, module.k_proj.weight, module.v_proj.weight]))
        pytorch.out_proj.weight.copy_(module.out_proj.weight)
        if has_bias:
            pytorch.in_proj_bias.copy_(torch.cat([module.q_proj.bias, module.k_proj.bias, module.v_proj.bias]))
            pytorch.out_proj.bias.copy_(module.out_proj.bias)
    keys_from = context if context is not None else x
    hidden = None
    if is_causal:
        hidden = ~torch.ones(x.size(1), keys_from.size(1), dtype=torch.bool).tril()
    ignored_keys = None if padding_mask is None else ~padding_mask
    with torch.no_grad():
        output, _ = pytorch.eval()(x, keys_from, keys_from, key_padding_mask=ignored_keys, attn_mask=hidden,
                                   need_weights=False)
    return output
