"""Part 1: scaled_scores. (Seed test: the hidden-suite work extends this file.)"""
import math

import pytest
import torch

from grading_tests.gateway import CallOptions

pytestmark = pytest.mark.part(1)


def test_default_scale_on_the_lessons_eight_features(student):
    q, k = torch.ones(1, 8), torch.stack([2 * torch.ones(8), torch.ones(8)])
    got = student.call("scaled_scores", (q, k)).value
    expected = torch.tensor([[16 / math.sqrt(8), 8 / math.sqrt(8)]])
    assert got.shape == expected.shape, f"shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    assert torch.allclose(got, expected, atol=1e-4), "scores differ: did you divide by sqrt(E)?"


def test_gradients_flow_to_both_inputs(student):
    q, k = torch.randn(3, 4, dtype=torch.float64), torch.randn(5, 4, dtype=torch.float64)
    result = student.call("scaled_scores", (q, k), options=CallOptions(grad_outputs=(torch.ones(3, 5, dtype=torch.float64),)))
    grad_q, grad_k = result.input_grads
    assert grad_q is not None and grad_k is not None, "no gradient reached q or k: did you detach?"
    assert torch.allclose(grad_q, k.sum(0).expand(3, 4) / 2), "wrong gradient for q"
