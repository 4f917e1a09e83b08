"""Part 2: causal_mask, padding_mask, apply_mask and scaled_dot_product_attention."""
import pytest
import torch

from grader.gateway import CallOptions, vector_jacobian
from grading_tests import oracle
from grading_tests.checks import (
    call,
    describe_call,
    expect_close,
    expect_dtype,
    expect_equal,
    expect_pair,
    expect_result,
    expect_shape,
    expect_unmodified,
    fail,
    in_a_batch,
    laid_out,
    randn,
)
from grading_tests.placement import call_placed
from grading_tests.second_opinions import Questions, second_opinion
from grading_tests.tolerance import agree

pytestmark = pytest.mark.part(2)

SDPA = "scaled_dot_product_attention"
# The lesson's raw scores of three tokens (notebook 003).
LESSON_SCORES = torch.tensor([[7.0, -8.0, 6.0], [-3.0, 2.0, 4.0], [1.0, 6.0, -2.0]])


# ---------------------------------------------------------------- causal_mask

def causal_hints(L, S):
    S = L if S is None else S
    return [
        ("matches an upper-triangular mask (triu): True must be where key j <= query i",
         lambda: oracle.causal(S, L).T.contiguous()),
        ("matches a mask that hides the diagonal: a query may attend to its own position",
         lambda: torch.ones(L, S, dtype=torch.bool).tril(-1)),
        ("matches the inverted mask: True means MAY attend", lambda: ~oracle.causal(L, S)),
        ("matches a bottom-right aligned mask: align to the top-left corner as SDPA's is_causal does",
         lambda: torch.ones(L, S, dtype=torch.bool).tril(S - L)),
    ]


# Several sizes per test: the mask of one size is the same whatever else is given, so a table of the sizes the
# handout prints (or a constant [[True]]) would pass a test of one size without computing anything.
@pytest.mark.parametrize("sizes", [
    [(3, None), (1, None), (7, None)],
    [(2, 4), (3, 9)],                   # more keys than queries
    [(5, 2), (31, 7)],                  # more queries than keys
], ids=["square", "more-keys", "more-queries"])
def test_causal_mask_values(student, sizes):
    for L, S in sizes:
        args = (L,) if S is None else (L, S)
        result = call(student.causal_mask, *args)
        what = f"causal_mask({', '.join(map(str, args))})"
        expected = oracle.causal(L, S)
        expect_shape(result.value, expected.shape, what)
        expect_equal(result.value, expected, what, hints=causal_hints(L, S))


@pytest.mark.gated("causal_mask")
def test_causal_mask_on_the_requested_device(student, second_device):
    call_placed(second_device, student.causal_mask, 3, 5, shape=(3, 5), device_argument=True)


@pytest.mark.gated("causal_mask")
def test_causal_mask_on_the_default_device(student, second_device):
    """device=None means torch's default device (torch.set_default_device), not the CPU."""
    call_placed(second_device, student.causal_mask, 3, 5, shape=(3, 5), default_device=True)


# ---------------------------------------------------------------- padding_mask

def padding_hints(lengths, max_len):
    lengths = [int(n) for n in lengths]
    width = max(lengths) if max_len is None else max_len
    return [
        ("matches the inverted mask: True marks the REAL tokens", lambda: ~oracle.padding(lengths, max_len)),
        ("matches one real token too many (<= instead of <)",
         lambda: oracle.padding([min(n + 1, width) for n in lengths], width)),
        ("matches one real token too few", lambda: oracle.padding([max(n - 1, 0) for n in lengths], width)),
    ]


@pytest.mark.parametrize("lengths, max_len", [
    ([3, 5, 4, 2, 0], None),    # the lesson's batch, and two rows it does not print
    ([1, 7, 2, 7], 9),          # wider than the longest sequence
    ([0, 2], 3),                # an empty sequence
    ([1, 0, 1, 1, 0, 1], None),  # at most one token: a single column, not all True
], ids=["lesson-and-more", "max-len", "empty-row", "one-token"])
@pytest.mark.parametrize("as_tensor", [False, True], ids=["list", "tensor"])
def test_padding_mask_values(student, lengths, max_len, as_tensor):
    arg = torch.tensor(lengths) if as_tensor else lengths
    kwargs = {} if max_len is None else {"max_len": max_len}
    result = call(student.padding_mask, arg, **kwargs)
    expected = oracle.padding(lengths, max_len)
    what = f"padding_mask({lengths}{'' if max_len is None else f', max_len={max_len}'})"
    expect_shape(result.value, expected.shape, what)
    expect_equal(result.value, expected, what, hints=padding_hints(lengths, max_len))


@pytest.mark.gated("padding_mask")
def test_padding_mask_on_the_lengths_device(student, second_device):
    call_placed(second_device, student.padding_mask, torch.tensor([2, 4, 1]), max_len=5, shape=(3, 5))
    call_placed(second_device, student.padding_mask, torch.tensor([2, 4, 1]), shape=(3, 4))   # max_len from the lengths


@pytest.mark.gated("padding_mask")
def test_padding_mask_on_the_requested_device(student, second_device):
    call_placed(second_device, student.padding_mask, [2, 4, 1], max_len=5, shape=(3, 5), device_argument=True)
    # max_len from the lengths:
    call_placed(second_device, student.padding_mask, [2, 4, 1], shape=(3, 4), device_argument=True)


@pytest.mark.gated("padding_mask")
def test_padding_mask_of_a_list_on_the_default_device(student, second_device):
    """Lengths given as a list and no device: torch's default device (torch.set_default_device)."""
    call_placed(second_device, student.padding_mask, [2, 4, 1], max_len=5, shape=(3, 5), default_device=True)
    # max_len from the lengths:
    call_placed(second_device, student.padding_mask, [2, 4, 1], shape=(3, 4), default_device=True)


# ---------------------------------------------------------------- apply_mask

def check_apply_mask(student, scores, mask, options=CallOptions()):
    result = call(student.apply_mask, scores, mask, options=options)
    what = f"apply_mask(scores {tuple(scores.shape)} {scores.dtype}, mask {tuple(mask.shape)})"
    got = result.value
    expect_shape(got, scores.shape, what)
    expect_dtype(got, scores.dtype, what)
    keep = mask.expand_as(scores)
    if not torch.equal(got[keep], scores[keep]):
        inverted = torch.equal(got[~keep], scores[~keep])
        fail(f"{what} changed scores where the mask is True (may attend)"
             + (". Hint: it matches the inverted mask: True means MAY attend" if inverted else ""))
    hidden = got[~keep].double()
    lowest = torch.finfo(scores.dtype).min
    ok = torch.isneginf(hidden) | (hidden <= lowest / 2)
    if not ok.all():
        value = hidden[~ok][0].item()
        fail(f"{what} put {value:.6g} where the mask is False; use float('-inf') or torch.finfo(dtype).min, "
             f"which softmax turns into exactly 0 in every dtype")
    return result


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_apply_mask_hides_exactly_the_masked_scores(student, dtype):
    scores = randn(2, 3, 4, 5, seed=31, dtype=dtype, scale=3.0)
    mask = randn(4, 5, seed=32) > 0  # broadcasts over the leading dims
    check_apply_mask(student, scores, mask)


def test_apply_mask_broadcasts_a_padding_shaped_mask(student):
    scores = randn(3, 2, 4, 6, seed=33)
    mask = oracle.expand(oracle.padding([6, 2, 4]), 4)  # (3, 1, 4, 6)
    check_apply_mask(student, scores, mask)


def test_apply_mask_lesson_padding_gives_the_printed_weights(student):
    keep = torch.tensor([True, True, False])
    result = check_apply_mask(student, in_a_batch(LESSON_SCORES, seed=5), keep)
    weights = torch.softmax(result.value[0].double(), dim=-1)
    expected = torch.tensor([[1, 0, 0], [0.0067, 0.9933, 0], [0.0067, 0.9933, 0]], dtype=torch.float64)
    expect_close(weights, expected, "softmax(apply_mask(lesson scores, last key padded))", atol=1e-4, rtol=0)


def test_apply_mask_without_mask_returns_the_scores(student):
    scores = randn(2, 3, 4, seed=34)
    result = call(student.apply_mask, scores, None)
    expect_close(result.value, scores.double(), "apply_mask(scores, None)", atol=0, rtol=0)


@pytest.mark.gated("apply_mask")
def test_apply_mask_does_not_modify_its_inputs(student):
    scores, mask = randn(2, 3, 4, seed=35), randn(3, 4, seed=36) > 0
    result = expect_result(call(student.apply_mask, scores, mask), (2, 3, 4), "apply_mask")
    expect_unmodified(result, "apply_mask", ["scores", "mask"])


@pytest.mark.gated("apply_mask")
def test_apply_mask_on_the_inputs_device(student, second_device):
    call_placed(second_device, student.apply_mask, randn(2, 3, 4, seed=37), randn(3, 4, seed=38) > 0, shape=(2, 3, 4))


# ---------------------------------------------------------------- scaled_dot_product_attention

def attention_hints(q, k, v, mask, is_causal, scale, index):
    return [(text, lambda fn=fn: (fn(q, k, v, mask, is_causal, scale) or (None, None))[index])
            for text, fn in oracle.ATTENTION_MISTAKES.values()]


def check_attention(student, q, k, v, mask=None, *, is_causal=False, scale=None, options=CallOptions(),
                    what=None):
    """One call of the student's attention, checked against the oracle; returns the CallResult."""
    kwargs = {}
    if is_causal:
        kwargs["is_causal"] = True
    if scale is not None:
        kwargs["scale"] = scale
    args = (q, k, v) if mask is None else (q, k, v, mask)
    result = call(student.scaled_dot_product_attention, *args, options=options, **kwargs)
    what = what or f"{SDPA}(q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}" + (
        "" if mask is None else f", mask {tuple(mask.shape)}") + ("" if not is_causal else ", is_causal=True") + (
        "" if scale is None else f", scale={scale}") + f") in {str(q.dtype).removeprefix('torch.')}"
    output, weights = expect_pair(result.value, what)
    expected_output, expected_weights = oracle.attention(q, k, v, mask, is_causal, scale)
    expect_shape(weights, expected_weights.shape, f"the weights of {what}")
    expect_shape(output, expected_output.shape, f"the output of {what}")
    expect_dtype(weights, q.dtype, f"the weights of {what}")
    expect_dtype(output, q.dtype, f"the output of {what}")
    expect_close(weights, expected_weights, f"the weights of {what}",
                 hints=attention_hints(q, k, v, mask, is_causal, scale, 1))
    expect_close(output, expected_output, f"the output of {what}",
                 hints=attention_hints(q, k, v, mask, is_causal, scale, 0))
    return result


def attend(student, q, k, v, mask=None, **kwargs):
    """The student's (output, weights) for one call, values unchecked (for tests of other properties)."""
    args = (q, k, v) if mask is None else (q, k, v, mask)
    what = describe_call(SDPA, args, kwargs)
    result = call(student.scaled_dot_product_attention, *args, **kwargs)
    return expect_result(result, attention_shapes(q, k, v), what).value


def attention_shapes(q, k, v):
    """The shapes of (output, weights) that attention promises for these inputs."""
    # torch.broadcast_shapes would import torch's symbolic-shapes machinery (a fifth of a second) for this
    batch = torch.broadcast_tensors(*(torch.empty(*t.shape[:-2], 0) for t in (q, k, v)))[0].shape[:-1]
    return (*batch, q.shape[-2], v.shape[-1]), (*batch, q.shape[-2], k.shape[-2])


def lesson(values):
    return torch.tensor(values, dtype=torch.float32)


def lessons_in_a_batch(*tensors, seed):
    """Each of the lesson's tensors as item 0 of a batch of random others (see checks.in_a_batch)."""
    return [in_a_batch(tensor, seed=seed + index) for index, tensor in enumerate(tensors)]


def test_lesson_causal_attention(student):
    q, k, v = lessons_in_a_batch(lesson([[1, 0, 0], [0, 1, 0]]), lesson([[1, 2, 3], [4, 5, 6]]),
                                 lesson([[0, 1, 0], [1, 0, 1]]), seed=6)
    result = check_attention(student, q, k, v, oracle.causal(2),
                             what="attention of the lesson's causal example, in a batch")
    output, weights = (value[0] for value in result.value)
    expect_close(weights, torch.tensor([[1, 0], [0.1503, 0.8497]]).double(), "lesson weights", atol=1e-4, rtol=0)
    expect_close(output, torch.tensor([[0, 1, 0], [0.8497, 0.1503, 0.8497]]).double(), "lesson output",
                 atol=1e-4, rtol=0)


def test_lesson_two_keys_unscaled_and_scaled(student):
    q, k, v = lessons_in_a_batch(lesson([[1, 1]]), lesson([[2, 2], [1, 1]]), lesson([[3, 3], [4, 4]]), seed=9)
    output, weights = (value[0] for value in check_attention(
        student, q, k, v, scale=1.0, what="the lesson's unscaled example, in a batch").value)
    expect_close(weights, torch.tensor([[0.8808, 0.1192]]).double(), "unscaled weights", atol=1e-4, rtol=0)
    expect_close(output, torch.tensor([[3.1192, 3.1192]]).double(), "unscaled output", atol=1e-4, rtol=0)
    q, k, v = lessons_in_a_batch(torch.ones(1, 8), torch.stack([2 * torch.ones(8), torch.ones(8)]),
                                 torch.stack([3 * torch.ones(8), 4 * torch.ones(8)]), seed=12)
    output, weights = (value[0] for value in check_attention(
        student, q, k, v, what="the lesson's 8-feature example, in a batch").value)
    expect_close(weights, torch.tensor([[0.9442, 0.0558]]).double(), "scaled weights", atol=1e-4, rtol=0)
    expect_close(output, torch.full((1, 8), 3.0558).double(), "scaled output", atol=1e-4, rtol=0)


def test_lesson_causal_softmax_of_three_tokens(student):
    eye = torch.eye(3)
    q, k, v = lessons_in_a_batch(LESSON_SCORES, eye, eye, seed=15)
    _, weights = check_attention(student, q, k, v, is_causal=True, scale=1.0,
                                 what="attention with q = the lesson's scores, k = v = identity, causal, in a "
                                      "batch").value
    expected = torch.tensor([[1, 0, 0], [0.0067, 0.9933, 0], [0.0067, 0.9930, 0.0003]]).double()
    expect_close(weights[0], expected, "causal weights of the lesson", atol=1e-4, rtol=0)


def test_lesson_broadcast_of_queries_over_key_batches(student):
    q, k, v = randn(3, 8, 4, seed=40), randn(3, 3, 8, 4, seed=41), randn(3, 3, 8, 4, seed=42)
    output, _ = check_attention(student, q, k, v).value
    expect_shape(output, (3, 3, 8, 4), "output for Q (3, 8, 4) against K, V (3, 3, 8, 4)")


def _mask(shape, seed):
    """A random mask that leaves key 0 visible, so no row is empty, even under a causal mask (the
    tests named for empty rows make their own)."""
    mask = randn(*shape, seed=seed) > -0.5
    mask[..., 0] = True
    return mask


# (q, k, v shapes, mask shape or None, is_causal, scale)
RANDOM_CASES = {
    "2d-L!=S-Ev!=E": ((7, 5), (3, 5), (3, 9), None, False, None),
    "3d-one-query": ((2, 1, 31), (2, 7, 31), (2, 7, 31), None, False, None),
    "4d-mask": ((2, 3, 7, 6), (2, 3, 5, 6), (2, 3, 5, 4), (2, 1, 7, 5), False, None),
    "4d-causal-L>S": ((2, 2, 6, 7), (2, 2, 4, 7), (2, 2, 4, 3), None, True, None),
    "causal-L<S": ((1, 3, 5), (1, 8, 5), (1, 8, 5), None, True, None),
    "mask-and-causal": ((2, 6, 10), (2, 6, 10), (2, 6, 3), (2, 6, 6), True, None),
    "broadcast-mask-and-scale": ((3, 2, 5, 12), (3, 2, 5, 12), (3, 2, 5, 12), (5, 5), False, 0.3),
    "broadcast-batch": ((2, 1, 4, 8), (1, 3, 6, 8), (1, 3, 6, 2), (6,), False, None),
    "zero-scale": ((2, 5, 6), (2, 4, 6), (2, 4, 3), (5, 4), False, 0.0),   # every visible key weighs the same
    # Past the tile sizes of a blocked softmax (16, 32, 64 keys), at odd lengths: a running maximum or normaliser
    # that is not rescaled between tiles is wrong only here.
    "67-keys-mask": ((2, 5, 8), (2, 67, 8), (2, 67, 3), (5, 67), False, None),
    "33-causal-odd": ((1, 2, 33, 4), (1, 2, 33, 4), (1, 2, 33, 6), None, True, None),
}


@pytest.mark.parametrize("case", RANDOM_CASES, ids=list(RANDOM_CASES))
def test_agrees_with_float64_math_on_random_inputs(student, case):
    q_shape, k_shape, v_shape, mask_shape, is_causal, scale = RANDOM_CASES[case]
    seed = 100 + list(RANDOM_CASES).index(case) * 7
    q, k, v = randn(*q_shape, seed=seed, scale=2.0), randn(*k_shape, seed=seed + 1), randn(*v_shape, seed=seed + 2)
    mask = None if mask_shape is None else _mask(mask_shape, seed + 3)
    check_attention(student, q, k, v, mask, is_causal=is_causal, scale=scale)


def test_views_of_the_inputs_give_the_same_attention(student):
    """q, k, v as the views real callers pass (sliced, transposed, permuted in memory) and a mask expanded over the
    heads: the same output and weights as contiguous inputs."""
    q, k, v = randn(2, 3, 5, 6, seed=170, scale=2.0), randn(2, 3, 7, 6, seed=171), randn(2, 3, 7, 4, seed=172)
    mask = _mask((2, 1, 5, 7), 173)
    views = [laid_out(t) for t in (q, k, v)]
    for name in views[0]:
        check_attention(student, *(view[name] for view in views), mask.expand(2, 3, 5, 7),
                        what=f"{SDPA}(q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, mask (2, 3, 5, 7) "
                             f"expanded from (2, 1, 5, 7)), q, k and v each {name}")


@pytest.mark.parametrize("is_causal, with_mask", [(False, False), (True, False), (False, True), (True, True)],
                         ids=["plain", "causal", "mask", "mask-and-causal"])
def test_gradients_agree_with_float64_math(student, is_causal, with_mask):
    f64 = torch.float64
    q, k, v = randn(2, 5, 6, seed=50, dtype=f64), randn(2, 5, 6, seed=51, dtype=f64), randn(2, 5, 3, seed=52, dtype=f64)
    mask = _mask((2, 5, 5), 53) if with_mask else None
    grad_out, grad_w = randn(2, 5, 3, seed=54, dtype=f64), randn(2, 5, 5, seed=55, dtype=f64)
    args = (q, k, v) if mask is None else (q, k, v, mask)
    result = call(student.scaled_dot_product_attention, *args, is_causal=is_causal,
                  options=CallOptions(grad_outputs=(grad_out, grad_w)))
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    out, weights = oracle.attention(*leaves, mask, is_causal)
    expected = vector_jacobian([out, weights], [grad_out, grad_w], leaves)
    got = result.input_grads[:3]
    for name, g, e in zip("qkv", got, expected, strict=True):
        if g is None:
            fail(f"no gradient reached {name}: keep the computation differentiable (no .detach(), .item(), "
                 f"torch.tensor(...) of intermediate values)")
        expect_close(g, e, f"the gradient with respect to {name}")


@pytest.mark.gated("scaled_dot_product_attention")
def test_rows_sum_to_one_over_visible_keys(student):
    q, k, v = randn(3, 6, 8, seed=60, scale=3.0), randn(3, 9, 8, seed=61), randn(3, 9, 8, seed=62)
    mask = oracle.expand(oracle.padding([9, 4, 6]), 6)[:, 0]  # (3, 6, 9)
    _, weights = attend(student, q, k, v, mask)
    sums = weights.double().sum(-1)
    if not agree(sums, torch.ones_like(sums), atol=1e-5):
        fail("attention weights do not sum to 1 over the visible keys of each query")
    if (weights[~mask] != 0).any():
        fail("a masked key got a non-zero attention weight")


# The three tests below compare two answers; the second comes from a process that never saw the first's inputs
# (second_opinions.py), so an answer remembered from the first call cannot stand in for it.
def future_tokens_changed():
    q, k, v = randn(2, 7, 6, seed=63), randn(2, 7, 6, seed=64), randn(2, 7, 5, seed=65)
    q2, k2, v2 = q.clone(), k.clone(), v.clone()
    for t in (q2, k2, v2):
        t[:, 4:] += 10.0
    return Questions(lambda student: attend(student, q, k, v, is_causal=True),
                lambda student: attend(student, q2, k2, v2, is_causal=True))


@pytest.mark.gated(SDPA)
@second_opinion(future_tokens_changed)
def test_future_tokens_do_not_change_past_outputs(opinions):
    (before, _), (after, _) = opinions.first, opinions.second
    if not agree(before[:, :4], after[:, :4], atol=1e-6):
        fail("with is_causal=True, changing tokens 4..6 changed the outputs of tokens 0..3: "
             "a query must not see keys after its own position")


def padded_keys_changed():
    q, k, v = randn(3, 5, 6, seed=66), randn(3, 8, 6, seed=67), randn(3, 8, 4, seed=68)
    lengths = [8, 3, 6]
    mask = oracle.expand(oracle.padding(lengths), 5)
    k2, v2 = k.clone(), v.clone()
    for b, n in enumerate(lengths):
        k2[b, n:] = randn(8 - n, 6, seed=69 + b, scale=5.0)
        v2[b, n:] = randn(8 - n, 4, seed=72 + b, scale=5.0)
    return Questions(lambda student: attend(student, q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1), mask),
                lambda student: attend(student, q.unsqueeze(1), k2.unsqueeze(1), v2.unsqueeze(1), mask))


@pytest.mark.gated(SDPA)
@second_opinion(padded_keys_changed)
def test_padded_keys_do_not_change_real_outputs(opinions):
    (before, _), (after, _) = opinions.first, opinions.second
    if not agree(before, after, atol=1e-6):
        fail("changing the padded keys and values changed the output: padded tokens must get zero weight")


PERMUTATION = torch.tensor([3, 0, 6, 1, 5, 2, 4])


def tokens_permuted():
    x = randn(2, 7, 6, seed=75)
    return Questions(lambda student: attend(student, x, x, x),
                lambda student: attend(student, x[:, PERMUTATION], x[:, PERMUTATION], x[:, PERMUTATION]))


@pytest.mark.gated(SDPA)
@second_opinion(tokens_permuted)
def test_self_attention_is_permutation_equivariant(opinions):
    (out, _), (permuted, _) = opinions.first, opinions.second
    if not agree(out[:, PERMUTATION], permuted, atol=1e-5):
        fail("without a mask, permuting the tokens should permute the outputs the same way")


def test_fully_masked_rows_give_zeros_not_nan(student):
    q, k, v = randn(2, 4, 5, seed=76), randn(2, 3, 5, seed=77), randn(2, 3, 6, seed=78)
    mask = torch.tensor([[True, False, True], [False, False, False], [True, True, True], [False, False, False]])
    output, weights = check_attention(student, q, k, v, mask).value
    for row in (1, 3):
        if (weights[:, row] != 0).any() or (output[:, row] != 0).any():
            fail(f"query {row} sees no key at all; its weights and output must be exactly 0 (as torch's SDPA)")


def test_mask_and_causal_combine_and_can_empty_a_row(student):
    # The mask hides key 0 from every query; with is_causal, query 0 is left with no visible key.
    q, k, v = randn(5, 4, seed=79), randn(5, 4, seed=80), randn(5, 4, seed=81)
    mask = torch.ones(5, 5, dtype=torch.bool)
    mask[:, 0] = False
    check_attention(student, q, k, v, mask, is_causal=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_inputs_with_masks(student, dtype):
    q, k, v = (randn(2, 6, 8, seed=s, dtype=dtype) for s in (82, 83, 84))
    mask = oracle.expand(oracle.padding([6, 4]), 6)[:, 0]
    check_attention(student, q, k, v, mask, is_causal=True)


def test_float64_inputs_stay_float64(student):
    q, k, v = (randn(3, 4, 7, seed=s, dtype=torch.float64) for s in (85, 86, 87))
    check_attention(student, q, k, v, _mask((3, 4, 4), 88))


@pytest.mark.gated("scaled_dot_product_attention")
def test_runs_on_the_inputs_device(student, second_device):
    q, k, v = randn(2, 5, 4, seed=89), randn(2, 6, 4, seed=90), randn(2, 6, 3, seed=91)
    call_placed(second_device, student.scaled_dot_product_attention, q, k, v, _mask((2, 5, 6), 92), is_causal=True,
                shape=attention_shapes(q, k, v))


# With is_causal too: combining the causal mask into the caller's mask in place is a way to modify it.
@pytest.mark.gated("scaled_dot_product_attention")
@pytest.mark.parametrize("is_causal", [False, True], ids=["mask", "mask-and-causal"])
def test_inputs_are_not_modified(student, is_causal):
    q, k, v = randn(2, 5, 4, seed=97), randn(2, 6, 4, seed=98), randn(2, 6, 3, seed=99)
    mask = _mask((2, 5, 6), 100)
    result = expect_result(call(student.scaled_dot_product_attention, q, k, v, mask, is_causal=is_causal),
                           attention_shapes(q, k, v), SDPA)
    expect_unmodified(result, SDPA, ["q", "k", "v", "mask"])


DROPOUT_P = 0.3


@pytest.mark.gated("scaled_dot_product_attention")
def test_dropout_zeroes_weights_at_the_given_rate_and_rescales(student):
    q, k, v = randn(4, 24, 8, seed=101), randn(4, 20, 8, seed=102), randn(4, 20, 5, seed=103)
    result = call(student.scaled_dot_product_attention, q, k, v, dropout_p=DROPOUT_P, options=CallOptions(seed=7))
    what = f"{SDPA}(..., dropout_p={DROPOUT_P})"
    output, weights = expect_result(result, attention_shapes(q, k, v), what).value
    # The survivors are compared with this very function's weights without dropout: its values
    # are the value tests' business, dropout is this test's.
    _, clean = attend(student, q, k, v)
    expect_shape(weights, clean.shape, f"the weights of {what}")
    weights, clean = weights.double(), clean.double()
    dropped = weights == 0
    rate = dropped.double().mean().item()
    if not 0.25 <= rate <= 0.35:
        fail(f"{what} zeroed {rate:.0%} of the weights; expected about {DROPOUT_P:.0%}"
             + (" (did you pass 1 - p, the keep probability?)" if 0.65 <= rate <= 0.75 else "")
             + (": dropout never happened" if rate == 0 else ""))
    kept = ~dropped
    expect_close(weights[kept], clean[kept] / (1 - DROPOUT_P),
                 f"the surviving weights of {what}, against its weights with dropout_p=0.0",
                 dtype=torch.float32,
                 hints=[("the survivors were not divided by 1 - p (use F.dropout, which rescales)",
                         lambda: clean[kept])])
    expect_close(output, weights @ v.double(), f"the output of {what} (it must be the returned weights @ v)",
                 dtype=torch.float32)


@pytest.mark.gated("scaled_dot_product_attention")
def test_no_dropout_when_dropout_p_is_zero(student):
    q, k, v = randn(2, 6, 8, seed=104), randn(2, 6, 8, seed=105), randn(2, 6, 8, seed=106)
    what = f"{SDPA}(..., dropout_p=0.0)"
    (output, weights), (other_output, other_weights) = (
        expect_result(call(student.scaled_dot_product_attention, q, k, v, dropout_p=0.0,
                           options=CallOptions(seed=seed)), attention_shapes(q, k, v), what).value
        for seed in (8, 9))
    if not (torch.equal(weights, other_weights) and torch.equal(output, other_output)):
        fail(f"{what} gave different results for two random seeds: with dropout_p=0.0 nothing is random")
    zeros = int((weights == 0).sum())
    if zeros:
        fail(f"{what} returned {zeros} attention weights of exactly 0 without any mask: with dropout_p=0.0 "
             f"no weight is dropped")
