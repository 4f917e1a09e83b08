"""The emulated second device (grader/wire/emulated.py) against the CPU, operator by operator: what correct
code written for a GPU calls must run there, give the CPU's values, and land on the device asked for.

The catalogue holds every public torch function whose documentation takes a `device` (found from torch itself, so
a torch that adds a factory fails here until the factory is catalogued or excused), and the operators that the
handout's stubs, the zoo's variants and the outside students were seen to use. Issue 29, class 1: before the
fallback, tril_indices, autocast, generators and pinned memory all failed on the emulated device."""
from __future__ import annotations

import copy
import re
import subprocess
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F

from grader.paths import REPO
from grader.wire import emulated
from tests.patience import SAFETY_NET_S

DEVICE = emulated.NAME

# name -> a call taking the device (run once with "cpu", once with the emulated device, from the same seed)
FACTORIES = {
    "arange": lambda d: torch.arange(2, 9, 2, device=d),
    "as_tensor": lambda d: torch.as_tensor([1, 2, 3], device=d),
    "asarray": lambda d: torch.asarray([[1.0, 2.0]], device=d),
    "bartlett_window": lambda d: torch.bartlett_window(5, device=d),
    "blackman_window": lambda d: torch.blackman_window(5, device=d),
    "empty": lambda d: torch.empty(2, 3, device=d).fill_(1.5),
    "empty_like": lambda d: torch.empty_like(torch.ones(2, device=d)).fill_(2.0),
    "empty_permuted": lambda d: torch.empty_permuted((2, 3), (1, 0), device=d).fill_(3.0),
    "empty_strided": lambda d: torch.empty_strided((2, 3), (1, 2), device=d).fill_(4.0),
    "eye": lambda d: torch.eye(3, 4, device=d),
    "full": lambda d: torch.full((2, 2), float("-inf"), device=d),
    "full_like": lambda d: torch.full_like(torch.ones(3, device=d), 7),
    "hamming_window": lambda d: torch.hamming_window(6, device=d),
    "hann_window": lambda d: torch.hann_window(6, device=d),
    "linspace": lambda d: torch.linspace(0, 1, 5, device=d),
    "logspace": lambda d: torch.logspace(0, 2, 3, device=d),
    "ones": lambda d: torch.ones(2, 3, dtype=torch.bool, device=d),
    "ones_like": lambda d: torch.ones_like(torch.zeros(2, device=d)),
    "rand": lambda d: torch.rand(4, device=d),
    "rand_like": lambda d: torch.rand_like(torch.zeros(4, device=d)),
    "randint": lambda d: torch.randint(0, 9, (5,), device=d),
    "randint_like": lambda d: torch.randint_like(torch.zeros(5, device=d), 9),
    "randn": lambda d: torch.randn(2, 3, device=d),
    "randn_like": lambda d: torch.randn_like(torch.zeros(3, device=d)),
    "randperm": lambda d: torch.randperm(6, device=d),
    "range": lambda d: _deprecated(torch.range, 0, 3, device=d),
    "tensor": lambda d: torch.tensor([[True, False]], device=d),
    "tril_indices": lambda d: torch.tril_indices(3, 4, device=d),
    "triu_indices": lambda d: torch.triu_indices(3, 4, 1, device=d),
    "zeros": lambda d: torch.zeros(2, 3, device=d),
    "zeros_like": lambda d: torch.zeros_like(torch.ones(2, device=d)),
    "scalar_tensor": lambda d: torch.scalar_tensor(3.5, device=d),
    "normal": lambda d: torch.normal(0.0, 1.0, (3,), device=d),
    "new_ones": lambda d: torch.zeros(2, device=d).new_ones(3),
    "new_full": lambda d: torch.zeros(2, device=d).new_full((2,), -1.0),
    "new_tensor": lambda d: torch.zeros(2, device=d).new_tensor([1, 2]),
    "generator": lambda d: torch.rand(3, generator=torch.Generator(device=d).manual_seed(5), device=d),
    "generator_bernoulli": lambda d: torch.bernoulli(torch.full((4,), 0.5, device=d),
                                                      generator=torch.Generator(device=d).manual_seed(2)),
}
# Public functions that mention a device but are no factory of a strided tensor on it, and why.
EXCUSED = {
    "from_file": "reads a file", "from_dlpack": "takes another library's tensor where it is",
    "segment_reduce": "takes no device", "set_default_device": "checked in test_engine_wire",
    "tensordot": "takes no device",
    "kaiser_window": "its CPU kernel looks its device up through a DispatchStub, which no Python backend can "
                     "serve (the one factory of the catalogue that does; no attention code calls it)",
    **{name: "sparse layouts: no GPU code of the handout builds one" for name in (
        "sparse_bsc_tensor", "sparse_bsr_tensor", "sparse_compressed_tensor", "sparse_coo_tensor",
        "sparse_csc_tensor", "sparse_csr_tensor")},
}

x = torch.randn(2, 3, 4, 5, generator=torch.Generator().manual_seed(0))
keep = torch.rand(4, 5, generator=torch.Generator().manual_seed(1)) > 0.3


def _on(device):
    return {"x": x.to(device), "keep": keep.to(device)}


# name -> a computation on the inputs moved to the device (what attention code calls)
OPERATORS = {
    "matmul": lambda t: torch.matmul(t["x"], t["x"].transpose(-2, -1)) * 0.5,
    "einsum": lambda t: torch.einsum("bhld,bhsd->bhls", t["x"], t["x"]),
    "baddbmm": lambda t: torch.baddbmm(torch.zeros(6, 4, 4, device=t["x"].device), t["x"].reshape(6, 4, 5),
                                       t["x"].reshape(6, 4, 5).transpose(1, 2)),
    "masked_fill": lambda t: t["x"].masked_fill(~t["keep"], float("-inf")),
    "where_finfo": lambda t: torch.where(t["keep"], t["x"], torch.finfo(t["x"].dtype).min),
    "softmax": lambda t: torch.softmax(t["x"].masked_fill(~t["keep"], float("-inf")), dim=-1),
    "softmax_float32": lambda t: F.softmax(t["x"].half(), dim=-1, dtype=torch.float32),
    "nan_to_num": lambda t: torch.nan_to_num(torch.full((2,), float("nan"), device=t["x"].device), nan=0.0),
    "tril_triu": lambda t: torch.ones(4, 5, dtype=torch.bool, device=t["x"].device).tril() & ~t["keep"].triu(1),
    "heads": lambda t: t["x"].permute(0, 2, 1, 3).contiguous().view(2, 4, 15).unflatten(-1, (3, 5)),
    "expand_repeat": lambda t: t["keep"][None, None].expand(2, 3, 4, 5).repeat(1, 1, 1, 2),
    "cat_stack_chunk": lambda t: torch.stack(torch.cat([t["x"], t["x"]], -1).chunk(2, dim=-1)),
    "amax_exp_sum": lambda t: (t["x"] - t["x"].amax(-1, keepdim=True)).exp().sum(-1),
    "cumsum_sort_topk": lambda t: torch.topk(torch.sort(t["x"].cumsum(-1), -1).values, 2).values,
    "linear": lambda t: F.linear(t["x"], torch.ones(3, 5, device=t["x"].device), torch.zeros(3, device=t["x"].device)),
    "dropout": lambda t: F.dropout(t["x"], 0.5),
    "sdpa": lambda t: F.scaled_dot_product_attention(t["x"], t["x"], t["x"], attn_mask=t["keep"][:, :4]),
    "sdpa_mask_and_causal": lambda t: F.scaled_dot_product_attention(t["x"], t["x"], t["x"],
                                                                      attn_mask=t["keep"][:, :4], is_causal=True),
    "arange_compare": lambda t: (torch.arange(5, device=t["x"].device)
                                 < torch.tensor([2, 4], device=t["x"].device)[:, None]),
    "as_tensor_stays": lambda t: torch.as_tensor(t["keep"]),
    "float64": lambda t: t["x"].double().softmax(-1),
    "autocast_off": lambda t: _autocast(t["x"], enabled=False),
    "autocast_on": lambda t: _autocast(t["x"], enabled=True),
    "pinned_empty": lambda t: torch.empty(3, pin_memory=True).fill_(1.0).to(t["x"].device),
    "pin_memory": lambda t: torch.ones(3).pin_memory().to(t["x"].device),
    "module_to": lambda t: torch.nn.Linear(5, 2).to(t["x"].device)(t["x"]),
    "boolean_index": lambda t: t["x"][..., t["keep"]],
    "nonzero": lambda t: torch.nonzero(t["keep"]),
    "masked_select": lambda t: torch.masked_select(t["x"], t["keep"]),
    "repeat_interleave": lambda t: t["x"].repeat_interleave(2, dim=1),
    "scatter": lambda t: torch.zeros(2, 5, device=t["x"].device).scatter(
        1, torch.tensor([[0, 4], [1, 3]], device=t["x"].device), torch.ones(2, 2, device=t["x"].device)),
    "deepcopy": lambda t: copy.deepcopy(t["x"]),
    "channels_last_clone": lambda t: t["x"].clone(memory_format=torch.channels_last),
}


def _deprecated(factory, *args, **kwargs):
    """A factory torch still documents but warns about (torch.range): caught, for students still call it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return factory(*args, **kwargs)


def _autocast(value, enabled):
    with torch.autocast(device_type=value.device.type, dtype=torch.bfloat16, enabled=enabled):
        return torch.softmax(value, dim=-1).float()


def _difference(expected, got, device_type: str, *, rtol: float, atol: float, values: bool = True) -> str:
    """How a result on a device differs from the CPU's ("" when it does not): its device, dtype and shape, and,
    with values, its values: equal, or as close as two of torch's kernels of one operation are (SDPA's math
    backend against the CPU's own, a GPU's kernels against the CPU's)."""
    if isinstance(expected, (tuple, list)):
        return "; ".join(filter(None, (_difference(a, b, device_type, rtol=rtol, atol=atol, values=values)
                                       for a, b in zip(expected, got, strict=True))))
    if got.device.type != device_type or got.dtype != expected.dtype or got.shape != expected.shape:
        return f"{got.device} {got.dtype} {tuple(got.shape)}"
    plain = emulated.to_plain(got).cpu()
    if values and not (torch.equal(plain, expected) or
                       torch.allclose(plain, expected, rtol=rtol, atol=atol, equal_nan=True)):
        return f"values differ: {plain} against {expected}"
    return ""


def _same(cpu, emulated_result, device_type):
    difference = _difference(cpu, emulated_result, device_type, rtol=1e-5, atol=1e-6)
    assert not difference, difference


def _documented_factories() -> set[str]:
    """Public torch functions whose documentation takes a device."""
    found = set()
    for name in dir(torch):
        obj = getattr(torch, name)
        if name.startswith("_") or not callable(obj) or isinstance(obj, type):
            continue
        if re.search(r"\bdevice=|\n\s*device \(", getattr(obj, "__doc__", None) or ""):
            found.add(name)
    return found


def test_every_documented_factory_is_catalogued_or_excused():
    missing = _documented_factories() - set(FACTORIES) - set(EXCUSED)
    assert not missing, f"catalogue these factories (or excuse them, with why): {sorted(missing)}"


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_a_factory_gives_the_cpus_values_on_the_emulated_device(name):
    with emulated.LikeAGpu():
        torch.manual_seed(11)
        expected = FACTORIES[name]("cpu")
        torch.manual_seed(11)
        got = FACTORIES[name](emulated.device())
    _same(expected, got, DEVICE)


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_an_operator_gives_the_cpus_values_on_the_emulated_device(name):
    with emulated.LikeAGpu():
        torch.manual_seed(3)
        expected = OPERATORS[name](_on("cpu"))
        torch.manual_seed(3)
        got = OPERATORS[name](_on(emulated.device()))
    _same(expected, got, DEVICE)


def test_a_generator_of_the_emulated_device_says_so_and_every_generator_is_still_a_generator():
    emulated.install()
    generator = torch.Generator(device=emulated.device())
    assert generator.device == emulated.device() and torch.Generator().device == torch.device("cpu")
    assert isinstance(torch.default_generator, torch.Generator) and isinstance(generator, torch.Generator)


WITHOUT_FALLBACK = """
import torch
from grader.wire import emulated
from grader.paths import REPO
from tests.patience import SAFETY_NET_S
torch.library.Library.fallback = lambda *args, **kwargs: None   # the defence switched off
emulated.install()
try:
    torch.tril_indices(3, 4, device=emulated.device())
    print("ran")
except NotImplementedError as error:
    print("refused:", str(error).splitlines()[0])
"""


def test_without_the_fallback_a_factory_with_no_kernel_of_the_device_fails():
    """The defence switched off (a fresh process: the fallback cannot be taken back once registered): tril_indices
    has no kernel of the emulated device, which is what students' correct causal masks met."""
    proc = subprocess.run([sys.executable, "-c", WITHOUT_FALLBACK], cwd=REPO, capture_output=True, text=True,
                          timeout=SAFETY_NET_S)
    assert proc.stdout.startswith("refused: Could not run 'aten::tril_indices'"), proc.stdout + proc.stderr


# ---------------------------------------------------------------- the same catalogue on CUDA, where there is one

# Only shape, dtype and device compared on CUDA: drawn from a generator (CUDA's random streams are not the CPU's),
# or under autocast (which casts by a policy of each device type).
SHAPE_ONLY = {"rand", "rand_like", "randint", "randint_like", "randn", "randn_like", "randperm", "normal",
              "generator", "generator_bernoulli", "dropout", "autocast_on"}


def mismatches_on(device: torch.device) -> list[str]:
    """The catalogue on a real device against the CPU (run in a process of its own: never beside the emulated
    device, which takes CUDA's place as torch's accelerator once installed)."""
    found = []
    calls = [(name, lambda d, make=make: make(d)) for name, make in FACTORIES.items()]
    calls += [(name, lambda d, make=make: make(_on(d))) for name, make in OPERATORS.items()]
    for name, make in calls:
        try:
            torch.manual_seed(11)
            expected = make("cpu")
            torch.manual_seed(11)
            got = make(device)
            difference = _difference(expected, got, device.type, rtol=1e-4, atol=1e-5, values=name not in SHAPE_ONLY)
            if difference:
                found.append(f"{name}: {difference}")
        except Exception as error:  # noqa: BLE001 - every failure of the catalogue is reported, not only the first
            found.append(f"{name}: {type(error).__name__}: {error}")
    return found


ON_CUDA = """
import torch
from tests.test_emulated_fidelity import mismatches_on
print(mismatches_on(torch.device("cuda")))
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (benchmarks/gpu_check.sh runs it there)")
def test_the_catalogue_runs_on_cuda_with_the_cpus_values():
    proc = subprocess.run([sys.executable, "-c", ON_CUDA], cwd=REPO, capture_output=True, text=True,
                          timeout=SAFETY_NET_S)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout[-3000:] + proc.stderr[-3000:]
