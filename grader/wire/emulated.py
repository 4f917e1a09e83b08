"""A second device emulated on the CPU, so that device checks decide on a machine without a GPU.

    install()            register the device (once per process; the sandbox's template does it). Never in a
                         process that runs CUDA: a registered PrivateUse1 backend becomes torch's accelerator
                         in CUDA's place, and CUDA's backward then fails an internal assert on its streams
    NAME                 its device type: tensors there report `device(type='emulated', index=0)`
    to_plain(tensor)     a tensor there, as a plain CPU tensor holding its values

A check of "the result lives on the inputs' device" needs a device other than the CPU. PyTorch's meta
device has no values, so code that reads values (int(n), .item(), .tolist(), boolean indexing) cannot run
there and such a check could only be skipped. This device has values: each of its tensors wraps a CPU
tensor, and every operation runs on the CPU, through torch's PrivateUse1 backend (renamed) and a tensor
subclass's __torch_dispatch__. What a CUDA device refuses, it refuses too, with CUDA's message:
- an operation mixing its tensors with CPU tensors of one or more dimensions (0-dim CPU tensors are
  allowed, as CUDA allows them; so are CPU indices in indexing, and copies between the devices);
- .numpy() (and so np.asarray) of its tensors.
Everything else works as on a GPU: factories with device=..., .to(), .item(), .tolist(), autograd,
nn.Module.to(), dropout, and F.scaled_dot_product_attention with the CPU's semantics (torch runs a device of
its own through SDPA's math backend, which refuses an attn_mask together with is_causal=True; the CPU's and
CUDA's default backends accept both, so while a `LikeAGpu` mode is active the causal mask is folded into
attn_mask first). A result computed here comes back with its values.

What a GPU backend registers beyond its kernels is here too, so correct code written for CUDA runs unchanged:
- every operator without a kernel of this device (torch.tril_indices(..., device=...), and any factory torch
  adds) runs on the CPU through one fallback, its results put here;
- torch.autocast(device_type=NAME, ...) (a backend module that names the dtypes autocast may use);
- torch.Generator(device=...) (a CPU generator that says it is here: this device's random numbers are the
  CPU's) and a device's factories drawing from it;
- pinned memory (pin_memory=True, Tensor.pin_memory()), which only a real accelerator has: while
  `LikeAGpu` is active a pinned tensor is an ordinary CPU tensor, as pinning changes no value.
tests/test_emulated_fidelity.py holds it to the CPU's values, operator by operator (and CUDA to them, on a GPU).
"""
from __future__ import annotations

import sys
import types

import torch
from torch.utils.backend_registration import _DummyBackendModule, _setup_privateuseone_for_python_backend

NAME = "emulated"
# CUDA's own words, so a student sees the message a GPU would give.
MIXED = ("Expected all tensors to be on the same device, but found at least two devices, {device} and cpu! "
         "(when checking argument of {op})")
NUMPY = "can't convert {device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
# Operations that may take CPU tensors beside this device's, as CUDA's do.
CROSS_DEVICE = {"copy_", "_copy_from", "_copy_from_and_resize", "_to_copy", "index", "index_put", "index_put_",
                "_index_put_impl_", "_unsafe_index", "_unsafe_index_put", "lift_fresh", "lift_fresh_copy"}

_state: dict[str, object] = {"installed": False, "library": None, "fallback": None}


def device() -> torch.device:
    install()
    return torch.device(NAME, 0)


class EmulatedTensor(torch.Tensor):
    """A tensor on the emulated device: a wrapper whose values are the CPU tensor `_values`."""

    _values: torch.Tensor   # type: ignore[assignment]  # shadows the sparse accessor, which no dense tensor uses

    @staticmethod
    def __new__(cls, cpu: torch.Tensor):
        wrapper = torch.Tensor._make_wrapper_subclass(
            cls, cpu.shape, strides=cpu.stride(), storage_offset=cpu.storage_offset(), dtype=cpu.dtype,
            layout=cpu.layout, device=device(), requires_grad=cpu.requires_grad,
            # Its shape and strides are asked of _values each time: an out= kernel (torch.arange(n, device=...)
            # fills an empty tensor) resizes _values, and a fixed shape would stay (0,).
            dispatch_sizes_strides_policy="sizes")
        wrapper._values = cpu
        return wrapper

    def __repr__(self, *, tensor_contents=None):
        return repr(self._values).removesuffix(")") + f", device='{device()}')"

    def tolist(self):
        return self._values.tolist()

    def numpy(self, *, force: bool = False):
        raise TypeError(NUMPY.format(device=device()))

    def __array__(self, dtype=None, copy=None):
        raise TypeError(NUMPY.format(device=device()))

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _run(func, args, kwargs or {})


def _is_here(value) -> bool:
    if isinstance(value, EmulatedTensor):
        return True
    return isinstance(value, (torch.device, str)) and torch.device(value).type == NAME


def _run(func, args, kwargs):
    """One operation: check the devices as CUDA does, run it on the CPU, put the results on this device. (Its
    arguments are walked once, by _plain: every operation of a second-device test comes here.)"""
    name = func.__name__.split(".")[0] if hasattr(func, "__name__") else str(func)
    target = kwargs.get("device")
    if target is not None and _is_here(target):
        kwargs = {**kwargs, "device": torch.device("cpu")}
    tensors: list[torch.Tensor] = []
    plain_args = _plain(args, tensors)
    plain_kwargs = {key: _plain(value, tensors) for key, value in kwargs.items()}
    here = any(isinstance(value, EmulatedTensor) for value in tensors)
    if here and name not in CROSS_DEVICE and any(
            not isinstance(value, EmulatedTensor) and value.dim() > 0 and value.device.type == "cpu"
            for value in tensors):
        raise RuntimeError(MIXED.format(device=device(), op=name))
    to_here = _is_here(target) if target is not None else here
    result = func(*plain_args, **plain_kwargs)
    out = kwargs.get("out")
    if out is not None:   # an out= variant returns the tensors it was given
        return out
    if name.endswith("_") and args and isinstance(args[0], EmulatedTensor):   # in place: the same tensor
        return args[0]
    if not to_here:
        return result
    return _here(result)


def _plain(value, tensors: list):
    """value with each tensor of this device as its CPU values, every tensor in it appended to tensors. An
    operator's arguments and results nest only in lists and tuples (a schema has no other container): a walk of its
    own, at a fraction of a general tree walk's cost."""
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return _unwrap(value)
    if type(value) is tuple or type(value) is list:
        return type(value)(_plain(item, tensors) for item in value)
    return value


def _here(value):
    """An operator's result (see _plain) with each of its CPU tensors put on this device."""
    if isinstance(value, torch.Tensor):
        return value if isinstance(value, EmulatedTensor) else EmulatedTensor(value)
    if type(value) is tuple or type(value) is list:
        return type(value)(_here(item) for item in value)
    return value


def _unwrap(value):
    return value._values if isinstance(value, EmulatedTensor) else value


def _empty_strided(size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    return EmulatedTensor(torch.empty_strided(size, stride, dtype=dtype))


def _empty(size, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return EmulatedTensor(torch.empty(size, dtype=dtype, memory_format=memory_format))


def _copy_from(source, destination, non_blocking=False):
    _unwrap(destination).copy_(_unwrap(source))
    return destination


def _fallback(op, *args, **kwargs):
    """Any operator that reaches this device with no kernel of its own (a factory asked for device=NAME, such as
    torch.tril_indices): run it on the CPU and put its results here."""
    if _is_here(kwargs.get("device")):
        kwargs = {**kwargs, "device": torch.device("cpu")}
    plain_kwargs = {key: _plain(value, []) for key, value in kwargs.items()}
    return _here(op(*_plain(args, []), **plain_kwargs))


class _BackendModule(_DummyBackendModule):
    """torch.<NAME>: what torch asks of a device's module (torch.autocast asks for the dtypes it may cast to)."""

    @staticmethod
    def get_amp_supported_dtype() -> list[torch.dtype]:
        return [torch.float16, torch.bfloat16]


class _AnyGenerator(type(torch._C.Generator)):   # type: ignore[misc]  # torch's generator metaclass
    """isinstance(g, torch.Generator) stays true of every generator torch makes (torch.default_generator too)."""

    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, torch._C.Generator)


class Generator(torch._C.Generator, metaclass=_AnyGenerator):
    """torch.Generator, which for this device is a CPU generator that says it is here (its operations run on the
    CPU, and so do their draws)."""

    _here: bool   # set by __new__: whether it stands for this device

    def __new__(cls, device=None):
        here = device is not None and _is_here(device)
        generator = super().__new__(cls, "cpu" if here or device is None else device)
        generator._here = here
        return generator

    @property   # type: ignore[override]  # read-only, as torch's own Generator.device is
    def device(self) -> torch.device:
        return torch.device(NAME, 0) if self._here else super().device


class LikeAGpu(torch.overrides.TorchFunctionMode):
    """What this device needs beyond its kernels to take what a GPU takes: F.scaled_dot_product_attention as the
    CPU's default backend takes it (an attn_mask with is_causal=True means both, folded into one mask here, not
    an error), and pinned memory as ordinary memory. A mode that also watches the calls subclasses it and
    overrides call (one mode, not two: every torch function a student calls passes through each mode)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        if name == "scaled_dot_product_attention":
            args, kwargs = _folded(args, kwargs)
        elif name == "pin_memory":
            return args[0].clone()   # a copy, as pinning makes one
        elif name == "is_pinned":
            return False
        elif kwargs.get("pin_memory"):
            kwargs["pin_memory"] = False
        return self.call(func, name, args, kwargs)

    def call(self, func, name: str, args, kwargs):
        """func(*args, **kwargs), as this device takes it (name: func's name)."""
        return func(*args, **kwargs)


def _folded(args, kwargs):
    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal")
    bound = {**dict(zip(names, args, strict=False)), **kwargs}
    mask, query, key = bound.get("attn_mask"), bound.get("query"), bound.get("key")
    if mask is None or not bound.get("is_causal") or not isinstance(query, EmulatedTensor):
        return args, kwargs
    causal = torch.ones(query.size(-2), key.size(-2), dtype=torch.bool, device=query.device).tril()
    folded = mask & causal if mask.dtype == torch.bool else mask.masked_fill(~causal, float("-inf"))
    return (), {**bound, "attn_mask": folded, "is_causal": False}


def install() -> None:
    """Register the device, once per process: torch's PrivateUse1 backend renamed NAME, with the kernels that
    operations reach without a tensor of ours to dispatch on (factories, the copy of torch.tensor(...)); and answer
    torch's look-up of distributed tensors before its first operation (_answer_the_dtensor_lookup)."""
    if _state["installed"]:
        return
    if torch._C._get_privateuse1_backend_name() != NAME:
        _setup_privateuseone_for_python_backend(NAME, backend_module=_BackendModule())
    library = torch.library.Library("aten", "IMPL")
    library.impl("empty_strided", _empty_strided, "PrivateUse1")
    library.impl("empty.memory_format", _empty, "PrivateUse1")
    library.impl("_copy_from", _copy_from, "PrivateUse1")
    fallback = torch.library.Library("_", "IMPL")
    fallback.fallback(_fallback, "PrivateUse1")
    # Autocast's own kernels where torch registers them for this device; every other operator passes through, as a
    # GPU backend declares it (CUDA's autocast does the same).
    fallback.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    torch.Generator = Generator   # type: ignore[misc]  # the device's generators, every other one still an instance
    _state.update(installed=True, library=library, fallback=fallback)   # the libraries must outlive this call
    _answer_the_dtensor_lookup()


# torch's module of distributed tensors, which its dispatcher looks up before a tensor subclass's first operation.
DTENSOR_MODULE = "torch.distributed.tensor"


def _answer_the_dtensor_lookup() -> None:
    """Before the first operation on any tensor subclass, torch's C++ dispatcher looks up DTensor (to give
    distributed tensors a fast path) and keeps what it found for the process's life: that import loads
    torch.distributed.tensor and with it sympy, half a second of CPU in every process that first uses this device
    (a sandbox warming it up, the template). Where nothing has imported that module yet, the lookup is answered
    here with a class no tensor is, and the module is left importable as ever. What that changes: a DTensor made
    later in the process would miss its fast path (and its operations would fail); a DTensor needs a process group
    and a device mesh, which attention code has no use for and a sandbox has no network to start."""
    if DTENSOR_MODULE in sys.modules:
        return
    stand_in = types.ModuleType(DTENSOR_MODULE)
    stand_in.DTensor = type("NotADTensor", (), {})   # type: ignore[attr-defined]
    sys.modules[DTENSOR_MODULE] = stand_in
    try:
        EmulatedTensor(torch.zeros(1)).neg()   # a subclass's first operation: the dispatcher's one lookup
    finally:
        if sys.modules.get(DTENSOR_MODULE) is stand_in:
            del sys.modules[DTENSOR_MODULE]


def to_plain(tensor: torch.Tensor) -> torch.Tensor:
    """The values of a tensor on the emulated device as a plain CPU tensor (any other tensor unchanged)."""
    return tensor._values if isinstance(tensor, EmulatedTensor) else tensor
