"""An adversary's answers: shaped like the right ones, computed from nothing the call was given.

Written into a generated submission as student/_adversary.py (autograder/adequacy/adversaries.py).
Every graded function of that submission first calls the reference (student/_reference/), so its
answers have the right type, shape, dtype and device and it raises exactly the contract's
ValueErrors; then `answer` replaces every value by one that the strategy below makes without
looking at the inputs' values. The strongest cheat there is, short of computing.
"""
import base64
import copy
import functools
import io
import math

import torch

STRATEGY = "@STRATEGY@"
_SEED = [0]           # the last seed of _random
_MEMO: dict = {}       # (function, shapes) -> the answer given the first time (memo)
_GIVEN: dict = {}      # fingerprint of an answer given -> the input it was given for (memo's inverse)
_INSIDE: list = []     # the graded call being answered, while the reference computes its shapes


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item)


def _map(value, change):
    """value with each tensor in it replaced by change(tensor)."""
    if isinstance(value, torch.Tensor):
        return change(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_map(item, change) for item in value)
    return value


def _on(value: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """value (made on the CPU) with like's dtype, device and autograd needs."""
    made = value.to(like.dtype).to(like.device)
    return made.requires_grad_() if like.requires_grad and made.is_floating_point() else made


def _random(like):
    """Fresh random values on every call."""
    generator = torch.Generator().manual_seed(_next_seed())
    if like.dtype == torch.bool:
        return _on(torch.rand(like.shape, generator=generator) > 0.5, like)
    return _on(torch.rand(like.shape, generator=generator, dtype=torch.float64), like)


def _next_seed():
    _SEED[0] += 1
    return 1000 + _SEED[0]


def _pattern(like):
    """The same values for every call of one shape, not one repeated value."""
    values = torch.arange(like.numel(), dtype=torch.float64).reshape(like.shape)
    values = torch.sin(values * 0.7) if like.dtype != torch.bool else (values % 3 != 0)
    return _on(values, like)


def _fingerprint(tensor):
    values = tensor.detach().to("cpu", torch.float64) if tensor.device.type != "meta" else None
    return (tuple(tensor.shape), str(tensor.dtype),
            None if values is None else hash(values.contiguous().numpy().tobytes()))


def _shapes(args, kwargs):
    described = [(tuple(t.shape), str(t.dtype)) for t in _tensors(list(args) + list(kwargs.values()))]
    plain = [repr(a) for a in list(args) + sorted(kwargs.items()) if not list(_tensors(a))]
    return tuple(described), tuple(plain)


def _memo(name, args, kwargs, right):
    """Random answers, but the same one again for a call of the same shapes; and an answer given earlier
    coming back (merge_heads of split_heads' answer) gets back the input it was given for."""
    for arg in _tensors(args[:1]):
        given = _GIVEN.get(_fingerprint(arg))
        if given is not None and isinstance(right, torch.Tensor) and right.shape == given.shape:
            return _on(given, right)
    key = (name, _shapes(args, kwargs))
    if key not in _MEMO:
        _MEMO[key] = [_random(t).detach().to("cpu") for t in _tensors(right)]
    result = _rebuild(right, iter(_on(a, r) for a, r in zip(_MEMO[key], _tensors(right), strict=True)))
    for arg in _tensors(args[:1]):
        if arg.device.type != "meta":
            for out in _tensors(result):
                _GIVEN[_fingerprint(out)] = arg.detach().to("cpu")
    return result


def _rebuild(like, items):
    """like, with its tensors replaced in turn by the items."""
    return _map(like, lambda _tensor: next(items))


# ----- lookup: the handout's examples, answered from a table; anything else, random -----------------------

TABLE = "@TABLE@"
_ENTRIES: list = []


def _entries():
    if not _ENTRIES and TABLE:
        _ENTRIES.extend(torch.load(io.BytesIO(base64.b64decode(TABLE)), weights_only=True))
    return _ENTRIES


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype or a.device.type == "meta":
            return False
        return bool(torch.equal(a.detach().to("cpu"), b.detach().to("cpu")))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _row_match(call_arg, entry_arg, row) -> bool:
    """call_arg's item `row` is entry_arg (a printed example as one item of a batch), or the same plain value."""
    if (isinstance(entry_arg, torch.Tensor) and isinstance(call_arg, torch.Tensor)
            and call_arg.dim() == entry_arg.dim() + 1 and call_arg.shape[1:] == entry_arg.shape):
        return row < call_arg.shape[0] and _same(call_arg[row], entry_arg)
    return _same(call_arg, entry_arg)


def _lookup(name, args, kwargs, right, state):
    inputs = list(args) + [kwargs[k] for k in sorted(kwargs)]
    answers = [_random(t).detach().to("cpu") for t in _tensors(right)]
    for entry in _entries():
        if entry["name"] != name or sorted(entry["kwargs"]) != sorted(kwargs) or len(entry["args"]) != len(args):
            continue
        if state is not None and not _same(entry["state"], state):
            continue
        known = list(entry["args"]) + [entry["kwargs"][k] for k in sorted(kwargs)]
        if all(_same(c, e) for c, e in zip(inputs, known, strict=True)) and _fits(entry["result"], right):
            answers = [t.clone() for t in _tensors(entry["result"])]
            break
        rows = max((c.shape[0] for c in _tensors(inputs) if c.dim() >= 1), default=0)
        for row in range(rows):
            if all(_row_match(c, e, row) for c, e in zip(inputs, known, strict=True)):
                _fill_row(answers, list(_tensors(entry["result"])), row)
    return _rebuild(right, iter(_on(a, r) for a, r in zip(answers, _tensors(right), strict=True)))


def _fits(result, right) -> bool:
    return [t.shape for t in _tensors(result)] == [t.shape for t in _tensors(right)]


def _fill_row(answers, known, row):
    for a, k in zip(answers, known, strict=False):
        if a.dim() == k.dim() + 1 and a.shape[1:] == k.shape:
            a[row] = k.to(a.dtype)


# ----- the strategies ------------------------------------------------------------------------------------------

def _other_inputs(function, args, kwargs):
    """The right function of other inputs: every tensor replaced by a fixed random one of its shape."""
    def stand_in(t):
        generator = torch.Generator().manual_seed(7)
        if t.dtype == torch.bool:
            return torch.ones(t.shape, dtype=torch.bool).to(t.device)
        if not t.is_floating_point():
            return torch.ones(t.shape, dtype=t.dtype).to(t.device)
        return torch.randn(t.shape, generator=generator, dtype=torch.float64).to(t.dtype).to(t.device)

    def plain(value):
        if isinstance(value, (list, tuple)) and value and all(type(v) is int for v in value):
            return type(value)(1 for _ in value)
        return value

    inputs = list(args) + list(kwargs.values())
    if not any(list(_tensors(a)) or plain(a) is not a for a in inputs):
        return None   # sizes only (causal_mask(L, S)): any function of them may be the answer, so no stand-in
    return function(*[plain(_map(a, stand_in)) for a in args],
                    **{k: plain(_map(v, stand_in)) for k, v in kwargs.items()})


def answer(name, function, args, kwargs, state=None):
    """What this adversary returns for one call of graded function `name`."""
    if _INSIDE:   # a graded function the reference calls on the way (forward's split_heads): the reference's
        return function(*args, **kwargs)
    _INSIDE.append(name)
    try:
        right = function(*args, **kwargs)   # the shapes, the dtype, the device and the contract's ValueErrors
    finally:
        _INSIDE.pop()
    return _answer(name, function, args, kwargs, state, right)


def _answer(name, function, args, kwargs, state, right):
    if STRATEGY == "control":   # the layer itself, answering right: it must score full marks
        return right
    if STRATEGY == "random":
        return _map(right, _random)
    if STRATEGY == "zeros":
        return _map(right, lambda t: _on(torch.zeros(t.shape), t))
    if STRATEGY == "ones":
        return _map(right, lambda t: _on(torch.ones(t.shape), t))
    if STRATEGY == "pattern":
        return _map(right, _pattern)
    if STRATEGY == "meta":
        return _map(right, lambda t: torch.empty(t.shape, dtype=t.dtype, device="meta"))
    if STRATEGY == "memo":
        return _memo(name, args, kwargs, right)
    if STRATEGY == "lookup":
        return _lookup(name, args, kwargs, right, state)
    if STRATEGY == "other-inputs":
        _INSIDE.append(name)
        try:
            with torch.no_grad():
                other = _other_inputs(function, args, kwargs)
        finally:
            _INSIDE.pop()
        if other is None:
            return _map(right, _random)
        return _rebuild(right, iter(_on(o.detach().to("cpu"), r)
                                    for o, r in zip(_tensors(other), _tensors(right), strict=True)))
    raise ValueError(f"unknown strategy {STRATEGY!r}")


def corrupt(name, function):
    """A graded function answering as this adversary does."""
    @functools.wraps(function)
    def adversary(*args, **kwargs):
        return answer(name, function, args, kwargs)
    return adversary


def corrupt_method(name, method):
    """A graded method of the module answering as this adversary does (its state is an input too)."""
    @functools.wraps(method)
    def adversary(self, *args, **kwargs):
        state = module_state(self)
        bound = functools.partial(method, self)
        if STRATEGY == "other-inputs":   # weights are inputs too: a module of the same shape, other weights
            bound = functools.partial(method, _reweighed(self))
        return answer(name, bound, args, kwargs, state)
    return adversary


def module_state(module) -> dict:
    """The module's weights and configuration: what a call of its methods depends on besides its arguments."""
    state = {key: value.detach().to("cpu") for key, value in module.state_dict().items()}
    state["__config__"] = torch.tensor([module.embed_dim, module.num_heads, int(module.training),
                                        int(getattr(module, "fused", False)), math.floor(module.dropout * 1000)])
    return state


def _reweighed(module):
    twin, generator = copy.deepcopy(module), torch.Generator().manual_seed(11)
    with torch.no_grad():
        for parameter in twin.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator, dtype=torch.float64).to(parameter.dtype))
    return twin
