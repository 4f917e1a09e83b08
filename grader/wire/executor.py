"""Runs graded calls on an imported submission: the only engine code that touches student objects.

It runs inside the sandbox (and in the grader's own process for LocalGateway, on trusted
folders). It holds no expected value and no test, and it decides nothing: it returns data that
the trusted side checks for itself: the results and the devices they were on, gradients, the
arguments' values after the call (compared there with the grader's own copies to see in-place
changes), the parameters a module created, and which of torch's attention functions the code
called (a hint for the instructor, never points: code running here can hide from any watcher).
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import os
import pathlib
import sys
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from assignment.spec import SPEC
from grader.wire import emulated, layout

# The graded names of the student API, from the assignment's declaration (the student/ docstrings state them).
FUNCTIONS = SPEC.functions
MODULE_CLASS = SPEC.module_class
# The module's graded methods that a test may run (forward, and the fused path's _fused_attention on its own).
MODULE_METHODS = tuple(name.split(".", 1)[1] for part in SPEC.parts for name in part.names
                       if name.startswith(MODULE_CLASS + ".") and not name.endswith(".__init__"))
# While forward runs, a call of another graded method (the fused step) is noted among the attention calls as
# WENT_THROUGH + its name: the handout requires forward(fused=True) to go through it.
WENT_THROUGH = "self."
# Torch's own attention, as its Python API names it (seen by a torch function mode) ...
ATTENTION_FUNCTIONS = ("scaled_dot_product_attention", "multi_head_attention_forward", "_native_multi_head_attention")
# ... and as the dispatcher sees it, even when the torch function mode is switched off (DisableTorchFunction):
# SDPA's kernels (and the masked softmax of its math backend), the native multi-head attention kernels.
ATTENTION_KERNELS = {prefix: "scaled_dot_product_attention"
                     for prefix in ("_scaled_dot_product", "_safe_softmax", "_flash_attention", "_efficient_attention")}
ATTENTION_KERNELS.update({prefix: "_native_multi_head_attention"
                          for prefix in ("_native_multi_head_attention", "_transformer_encoder_layer_fwd")})
SDPA_BACKENDS = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION", "cudnn": "CUDNN_ATTENTION",
                 "math": "MATH"}
MESSAGE_CHARS = 2000


class StudentFailure(Exception):
    """The student's code raised (any exception, SystemExit included): its class name and message only."""

    def __init__(self, type_name: str, message: str):
        super().__init__(f"{type_name}: {message}")
        self.type_name, self.message = type_name, message

    @classmethod
    def of(cls, error: BaseException) -> StudentFailure:
        try:
            message = str(error)
        except BaseException:  # noqa: BLE001 - a student's __str__ may raise anything
            message = "(the exception's message could not be read)"
        return cls(type(error).__name__[:100], message[:MESSAGE_CHARS])


@dataclass(frozen=True)
class CallOptions:
    """How a graded call runs: carried whole from the test to the executor (the wire's one options object)."""
    device: str = "cpu"
    seed: int = 0
    # Backprop sum(out_i * grad_outputs[i]) over the returned tensors (in order);
    # the gradients of floating-point tensor inputs come back. None: no backward.
    grad_outputs: tuple[torch.Tensor, ...] | None = None
    # The one SDPA backend F.scaled_dot_product_attention may use during the call (a key of
    # SDPA_BACKENDS); None: torch chooses.
    sdpa_backend: str | None = None
    # torch's default device during the call (where `device=None` creates tensors); None: the CPU.
    default_device: str | None = None


@dataclass(frozen=True)
class ModuleSpec:
    """Build MultiHeadAttention(**init_kwargs), optionally load weights, optionally run forward."""
    init_kwargs: dict
    state_dict: dict[str, torch.Tensor] | None = None   # loaded with strict=True
    forward_kwargs: dict | None = None                 # x, context, padding_mask, is_causal; None: build only
    method: str = "forward"                            # the graded method run with forward_kwargs (_fused_attention)
    training: bool = False
    dtype: torch.dtype | None = None                   # module.to(dtype) after loading weights


@dataclass
class ExecutedCall:
    value: Any                                  # plain CPU (or meta) tensors in the structure returned
    devices: list[str]                          # the device of each returned tensor, before the copy
    input_grads: list[torch.Tensor | None] | None
    args_after: list[torch.Tensor | None]       # each positional tensor argument after the call
    attention_calls: list[str] = field(default_factory=list)


@dataclass
class ExecutedModule:
    parameters: dict[str, torch.Tensor]         # named_parameters right after construction, as meta tensors
    output: torch.Tensor | None = None
    devices: list[str] = field(default_factory=list)
    input_grads: dict[str, torch.Tensor | None] | None = None
    param_grads: dict[str, torch.Tensor | None] | None = None
    inputs_after: dict[str, torch.Tensor] = field(default_factory=dict)
    attention_calls: list[str] = field(default_factory=list)
    sdpa_calls: list[dict] = field(default_factory=list)   # each F.scaled_dot_product_attention call's arguments


# F.scaled_dot_product_attention's parameters, in order, and the number of its calls one graded call records (a
# correct path makes one, or one per head; the record crosses the wire, so it is bounded).
SDPA_PARAMETERS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
MAX_SDPA_CALLS = 64


class _AttentionWatch(emulated.LikeAGpu):
    """Notes every call of torch's attention functions made through torch's Python API, and the arguments of each
    F.scaled_dot_product_attention call (sdpa_arguments) in `calls` where it is given one; changes nothing (beyond
    what the emulated device needs to take what a GPU takes: emulated.LikeAGpu)."""

    def __init__(self, seen: list[str], calls: list[dict] | None = None):
        super().__init__()
        self.seen, self.calls = seen, calls

    def call(self, func, name: str, args, kwargs):
        if name in ATTENTION_FUNCTIONS and name not in self.seen:
            self.seen.append(name)
        if name == "scaled_dot_product_attention" and self.calls is not None and len(self.calls) < MAX_SDPA_CALLS:
            try:
                self.calls.append(sdpa_arguments(args, kwargs))
            except Exception:  # noqa: BLE001 - arguments that cannot be copied: a record that satisfies nothing
                self.calls.append({})
        return func(*args, **kwargs)


def sdpa_arguments(args, kwargs) -> dict:
    """One SDPA call's arguments by name, each tensor a detached CPU copy of its values (an emulated tensor's
    too), for the trusted side to hold against the graded call's (grader/gateway/sdpa_calls.py)."""
    bound = {**dict(zip(SDPA_PARAMETERS, args, strict=False)), **kwargs}

    def copied(value):
        if isinstance(value, torch.Tensor):   # as a plain tensor, whatever subclass the student passed
            return plain_result(emulated.to_plain(value).detach().as_subclass(torch.Tensor))
        return value if value is None or type(value) in (bool, int, float) else repr(value)[:100]
    return {name: copied(bound[name]) for name in SDPA_PARAMETERS if name in bound}


class _KernelWatch(TorchDispatchMode):
    """Notes every attention kernel the dispatcher runs, however the call was made; changes nothing."""

    def __init__(self, seen: list[str]):
        super().__init__()
        self.seen = seen

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False   # else torch wraps __torch_dispatch__ in a Dynamo guard whose first use imports Dynamo (1.5 s)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        try:
            called = _KERNELS_SEEN[func]
        except KeyError:   # each operator's name is matched once per process
            called = _KERNELS_SEEN[func] = next(
                (called for prefix, called in ATTENTION_KERNELS.items() if func.__name__.startswith(prefix)), None)
        if called is not None and called not in self.seen:
            self.seen.append(called)
        return func(*args, **(kwargs or {}))


# Each operator the dispatcher has run here -> the attention function its kernel belongs to (None: none).
_KERNELS_SEEN: dict = {}


@contextlib.contextmanager
def watching_attention(seen: list[str], calls: list[dict] | None = None):
    """Note in `seen` the names of torch's attention functions that the code run inside calls, and in `calls` (if
    given) the arguments of each SDPA call (and let the emulated device take what a GPU takes: emulated.LikeAGpu)."""
    with _AttentionWatch(seen, calls), _KernelWatch(seen):
        yield


@contextlib.contextmanager
def running_as(options: CallOptions, seen: list[str], calls: list[dict] | None = None):
    """Everything a call's options ask of torch while the student's code runs: the watches, the SDPA backend, the
    default device."""
    with watching_attention(seen, calls), restricting_sdpa(options.sdpa_backend), \
            defaulting_to(options.default_device):
        yield


@contextlib.contextmanager
def restricting_sdpa(backend: str | None):
    """Let F.scaled_dot_product_attention use only this backend (None: no restriction)."""
    if backend is None:
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel([getattr(SDPBackend, SDPA_BACKENDS[backend])]):
        yield


def map_tensors(value, fn):
    """Apply fn to every tensor inside nested tuples/lists/dicts."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(map_tensors(item, fn) for item in value)
    if isinstance(value, dict):
        return {key: map_tensors(item, fn) for key, item in value.items()}
    return value


def flat_tensors(value) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []

    def note(tensor: torch.Tensor) -> torch.Tensor:
        found.append(tensor)
        return tensor
    map_tensors(value, note)
    return found


def plain_result(tensor: torch.Tensor) -> torch.Tensor:
    """A detached copy with the same dtype and shape, on the CPU, for the wire: a tensor of the emulated device
    stays one (the wire says where it was), a meta tensor stays meta (it has no values)."""
    if type(tensor) not in (torch.Tensor, emulated.EmulatedTensor):
        raise StudentFailure("TypeError", f"returned a {type(tensor).__name__}, not a plain torch.Tensor")
    tensor = tensor.detach()
    if tensor.device.type == "meta":
        return torch.empty(tensor.shape, dtype=tensor.dtype, device="meta")
    if isinstance(tensor, emulated.EmulatedTensor):
        return emulated.EmulatedTensor(emulated.to_plain(tensor).to("cpu", copy=True).contiguous())
    return tensor.to("cpu", copy=True).contiguous()


def shape_only(tensor: torch.Tensor) -> torch.Tensor:
    """A meta tensor of the tensor's shape and dtype: what the trusted side reads of a module's parameters (names
    and shapes; their values would cross the wire for nothing, eight tensors in every module call)."""
    return torch.empty(tensor.detach().shape, dtype=tensor.dtype, device="meta")


def _device(device: str, default_device: str | None) -> torch.device:
    """torch.device(device), the emulated device registered first where a call asks for it (a process that grades on
    it; never one that runs CUDA, see emulated.install)."""
    if emulated.NAME in (device.split(":")[0], (default_device or "").split(":")[0]):
        emulated.install()
    return torch.device(device)


@contextlib.contextmanager
def defaulting_to(device: str | None):
    """torch's default device during a call (None: leave it): where `device=None` means to create tensors.

    Afterwards torch has no default device again, not the CPU as one: torch.set_default_device("cpu") is not the
    state it starts in, for it makes every factory, torch.as_tensor(tensor) included, put its result on the CPU,
    so a tensor on a GPU that a later call hands to torch.as_tensor(lengths, device=None) would come back on the
    CPU, as it never does in a fresh process."""
    if device is None:
        yield
        return
    previous = torch.get_default_device() if _has_default_device() else None
    torch.set_default_device(device)
    try:
        yield
    finally:
        torch.set_default_device(previous)


def _has_default_device() -> bool:
    """Whether torch.set_default_device has set one (torch keeps it as a device context; there is no public getter
    that tells "none" from "the CPU")."""
    return getattr(getattr(torch, "_GLOBAL_DEVICE_CONTEXT", None), "device_context", None) is not None


def disable_compilation() -> None:
    """torch.compile runs the function as written (Dynamo off): a compiled function's results are the function's,
    no code is generated or traced in the sandbox, and nothing the executor installs around a call (its
    watches, the emulated device) meets Dynamo's tracing."""
    os.environ["TORCH_COMPILE_DISABLE"] = "1"   # read by torch._dynamo's config when it is first imported
    if "torch._dynamo" in sys.modules:
        sys.modules["torch._dynamo"].config.disable = True


def vector_jacobian(outputs, grad_outputs, inputs, *, allow_unused: bool = False):
    """d sum_i <outputs[i], grad_outputs[i]> / d inputs: bit for bit what torch.autograd.grad(outputs, inputs,
    grad_outputs) gives, taken through one scalar, because explicit grad_outputs make torch import its
    symbolic-shapes machinery (sympy: a fifth of a second in every grading process)."""
    total: Any = 0   # a tensor after the first term, on the outputs' device
    for index, (out, grad) in enumerate(zip(outputs, grad_outputs, strict=True)):
        if out.shape != grad.shape:   # as autograd.grad says it: a product would broadcast instead
            raise RuntimeError(f"Mismatch in shape: grad_output[{index}] has a shape of {tuple(grad.shape)} and "
                               f"output[{index}] has a shape of {tuple(out.shape)}")
        total = total + (out * grad.to(out.device, out.dtype)).sum()
    return torch.autograd.grad([total], list(inputs), allow_unused=allow_unused)


def _gradients(outputs, grad_outputs, inputs):
    """d sum(out_i * g_i) / d inputs, None where an input is not on the path."""
    pairs = [(out, g) for out, g in zip(flat_tensors(outputs), grad_outputs, strict=False) if out.requires_grad]
    wanted = [t for t in inputs if t is not None]
    if not pairs or not wanted:
        return [None] * len(inputs)
    grads = iter(vector_jacobian([o for o, _ in pairs], [g for _, g in pairs], wanted, allow_unused=True))
    return [next(grads) if t is not None else None for t in inputs]


def _plain_or_none(grads):
    return None if grads is None else [plain_result(g) if g is not None else None for g in grads]


def seed_random(seed: int) -> None:
    """Seed the generators a graded call draws from, as torch.manual_seed(seed) would: the CPU's (the emulated
    device's operations run on it too) and, once CUDA is running, every CUDA device's, so dropout gives the
    same stream on every device. Not torch.manual_seed itself: for each device type not yet started (CUDA on a
    CPU machine, MPS, XPU, MTIA) it queues the seed with a formatted stack trace, hundreds of microseconds
    a call spent opening source files a sandbox cannot read."""
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(seed)


def execute_call(student, function: str, args=(), kwargs=None, options: CallOptions = CallOptions()) -> ExecutedCall:
    """student.<function>(*args, **kwargs) on copies of the arguments moved to options.device."""
    if function not in FUNCTIONS:
        raise StudentFailure("ValueError", f"{function} is not a graded function")
    target = _device(options.device, options.default_device)
    grad_outputs = options.grad_outputs
    args = map_tensors(tuple(args), lambda t: layout.moved(t, target))
    kwargs = map_tensors(dict(kwargs or {}), lambda t: layout.moved(t, target))
    wants_grad = grad_outputs is not None
    differentiable = [a if isinstance(a, torch.Tensor) and a.is_floating_point() and wants_grad else None
                      for a in args]
    for tensor in differentiable:
        if tensor is not None:
            tensor.requires_grad_(True)
    seen: list[str] = []
    seed_random(options.seed)
    try:
        with running_as(options, seen):
            value = getattr(student, function)(*args, **kwargs)
            grads = _gradients(value, grad_outputs, differentiable) if wants_grad else None
        return ExecutedCall(
            value=map_tensors(value, plain_result), devices=[str(t.device) for t in flat_tensors(value)],
            input_grads=_plain_or_none(grads),
            args_after=[plain_result(a) if isinstance(a, torch.Tensor) else None for a in args],
            attention_calls=seen)
    except StudentFailure:
        raise
    except BaseException as error:  # noqa: BLE001 - everything the student raises is reported, even SystemExit
        raise StudentFailure.of(error) from None


def execute_module(student, spec: ModuleSpec, options: CallOptions = CallOptions()) -> ExecutedModule:
    """Build MultiHeadAttention(**spec.init_kwargs); with spec.forward_kwargs also load the weights and run
    spec.method (forward, or another graded method) once with them."""
    method, forward_kwargs, state_dict = spec.method, spec.forward_kwargs, spec.state_dict
    if method not in MODULE_METHODS:
        raise ValueError(f"{method!r} is not a graded method of {MODULE_CLASS}")   # the grader's mistake
    target = _device(options.device, options.default_device)
    grad_outputs = options.grad_outputs
    seen: list[str] = []
    calls: list[dict] = []
    seed_random(options.seed)
    try:
        module = getattr(student, MODULE_CLASS)(**spec.init_kwargs)
        parameters = {str(name): shape_only(p) for name, p in module.named_parameters()}
        if forward_kwargs is None:
            return ExecutedModule(parameters=parameters)
        if state_dict is not None:
            module.load_state_dict({k: v.clone() for k, v in state_dict.items()}, strict=True)
        if spec.dtype is not None:
            module.to(spec.dtype)
        module.to(target)
        module.train(spec.training)
        inputs = {key: layout.moved(value, target) if isinstance(value, torch.Tensor) else value
                  for key, value in forward_kwargs.items()}

        wants_grad = grad_outputs is not None
        for value in inputs.values():
            if wants_grad and isinstance(value, torch.Tensor) and value.is_floating_point():
                value.requires_grad_(True)
        seed_random(options.seed)
        input_grads = param_grads = None
        with running_as(options, seen, calls), noting_steps(module, seen, method):
            output = module(**inputs) if method == "forward" else getattr(module, method)(**inputs)
            if wants_grad:
                names = [k for k, v in inputs.items() if isinstance(v, torch.Tensor) and v.requires_grad]
                params = list(module.named_parameters())
                grads = _gradients(output, grad_outputs, [inputs[n] for n in names] + [p for _, p in params])
                input_grads = dict(zip(names, _plain_or_none(grads[:len(names)]), strict=False))
                param_grads = {str(n): g for (n, _), g in zip(params, _plain_or_none(grads[len(names):]), strict=False)}
        if not isinstance(output, torch.Tensor):
            raise StudentFailure("TypeError", f"{method} returned a {type(output).__name__}, not a tensor")
        return ExecutedModule(
            parameters=parameters, output=plain_result(output), devices=[str(output.device)],
            input_grads=input_grads, param_grads=param_grads,
            inputs_after={k: plain_result(v) for k, v in inputs.items() if isinstance(v, torch.Tensor)},
            attention_calls=seen, sdpa_calls=calls)
    except StudentFailure:
        raise
    except BaseException as error:  # noqa: BLE001 - whatever the student's module raises is its failure, reported as such
        raise StudentFailure.of(error) from None


@contextlib.contextmanager
def noting_steps(module, seen: list[str], method: str):
    """While `method` (forward) runs, note each call of the module's other graded methods (self.<name>(...),
    or through the class): wrapped on the module's class for the call, put back after."""
    cls, wrapped = type(module), {}
    for name in (m for m in MODULE_METHODS if m != method):
        step = getattr(cls, name, None)
        if callable(step):
            wrapped[name] = cls.__dict__.get(name)

            def noted(*args, _step=step, _name=name, **kwargs):
                seen.append(WENT_THROUGH + _name)
                return _step(*args, **kwargs)
            setattr(cls, name, functools.wraps(step)(noted))
    try:
        yield
    finally:
        for name, own in wrapped.items():
            if own is None:
                delattr(cls, name)
            else:
                setattr(cls, name, own)


def import_student():
    """Import the submission's `student` package, then each graded name in it: (the package, the names that
    could not be loaded -> why).

    The handout's package imports its modules lazily, so a module that fails (a syntax error, a package the
    grader does not have) costs only the names it defines: those are answered with the reason, the other
    parts are graded. A package that cannot be imported at all raises (nothing is graded).
    """
    student = importlib.import_module("student")
    unloadable = {}
    for name in (*FUNCTIONS, MODULE_CLASS):
        try:
            getattr(student, name)
        except BaseException as error:  # noqa: BLE001 - whatever the module raises at import, SystemExit included
            unloadable[name] = describe_import_error(error)
    return student, unloadable


def describe_import_error(error: BaseException) -> str:
    """'ModuleNotFoundError: No module named 'einops' (masking.py, line 12)': the error and where it happened."""
    if isinstance(error, SyntaxError):
        return f"SyntaxError: {error.msg} ({pathlib.Path(error.filename or '?').name}, line {error.lineno})"
    where = ""
    frame = error.__traceback__
    while frame is not None:
        if not frame.tb_frame.f_code.co_filename.startswith(("<", sys.prefix, sys.base_prefix)):
            where = f" ({pathlib.Path(frame.tb_frame.f_code.co_filename).name}, line {frame.tb_lineno})"
        frame = frame.tb_next
    failure = StudentFailure.of(error)
    return f"{failure.type_name}: {failure.message}{where}"
