"""Assertions that explain a failure in plain words."""
import torch


def t(values, dtype=torch.float32):
    """A tensor from nested lists, float32 unless told otherwise."""
    return torch.tensor(values, dtype=dtype)


def check_shape(got, expected_shape, what):
    assert isinstance(got, torch.Tensor), f"{what} should return a tensor, got {type(got).__name__}"
    assert tuple(got.shape) == tuple(expected_shape), (
        f"{what} returned shape {tuple(got.shape)}, expected {tuple(expected_shape)}"
    )


def check_values(got, expected, what, atol=1e-4, rtol=1e-4):
    """Shape first, then values; the message names the worst entry."""
    expected = torch.as_tensor(expected, dtype=got.dtype if got.is_floating_point() else None)
    check_shape(got, expected.shape, what)
    if got.dtype == torch.bool or expected.dtype == torch.bool:
        wrong = (got != expected).nonzero()
        assert wrong.numel() == 0, (
            f"{what} is wrong at {len(wrong)} position(s), first at index {tuple(wrong[0].tolist())}: "
            f"got {got[tuple(wrong[0])].item()}, expected {expected[tuple(wrong[0])].item()}"
        )
        return
    got64, exp64 = got.detach().double().cpu(), expected.double()
    assert not torch.isnan(got64).any(), f"{what} contains NaN"
    error = (got64 - exp64).abs() - (atol + rtol * exp64.abs())
    if (error > 0).any():
        where = tuple(torch.nonzero(error == error.max())[0].tolist())
        raise AssertionError(
            f"{what} differs from the expected value: at index {where} got {got64[where].item():.4f}, "
            f"expected {exp64[where].item():.4f}"
        )
