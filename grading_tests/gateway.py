"""The one door from the grading tests to a submission's code.

Tests never import `student`; they call a Gateway. Two implementations share
these semantics:

- LocalGateway (below) imports the submission into this process. It is for the
  project's own tests and for instructors trying the suite on a trusted folder.
- The grading engine's sandbox gateway (autograder/engine) runs the same calls
  in a separate, unprivileged process and sends back plain tensors.

Semantics every implementation keeps:
- Arguments are tensors, Python scalars, None, strings, and lists/tuples/dicts of
  these. The caller keeps its own copies: whatever the student's code does to the
  tensors it receives never reaches the caller's objects.
- `device` moves every tensor argument (and the module) there before the call.
- `seed` is passed to torch.manual_seed right before the call, so dropout is
  reproducible whatever ran before.
- `forbid_fused` makes PyTorch's fused attention APIs raise during the call.
- `sdpa_backend` ("flash", "efficient", "cudnn" or "math") lets
  F.scaled_dot_product_attention use only that backend during the call.
- Results come back detached, as plain torch.Tensor objects (not subclasses), in
  the structure the student's code returned (tensor, tuple, list), moved to the
  CPU; the device each returned tensor had is reported in `devices`. Tensors on
  the `meta` device stay on `meta`.
- An exception raised by the student's code becomes StudentError carrying the
  exception's class name and message (never the object itself).
"""
from __future__ import annotations

import contextlib
import copy
import importlib
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import torch

# The names of the student API (../shared/student-api.md) that may be called.
FUNCTIONS = (
    "scaled_scores", "causal_mask", "padding_mask", "apply_mask", "scaled_dot_product_attention",
    "split_heads", "merge_heads", "expand_padding_mask",
)
MODULE_CLASS = "MultiHeadAttention"


class StudentError(Exception):
    """The student's code raised, crashed, or timed out."""

    def __init__(self, type_name: str, message: str):
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


@dataclass(frozen=True)
class CallOptions:
    device: str = "cpu"
    seed: int = 0
    forbid_fused: bool = False
    # Backprop sum(out_i * grad_outputs[i]) over the returned tensors (in order);
    # the gradients of floating-point tensor inputs come back. None: no backward.
    grad_outputs: tuple[torch.Tensor, ...] | None = None
    # The one SDPA backend F.scaled_dot_product_attention may use during the call (a key of
    # SDPA_BACKENDS); None: torch chooses.
    sdpa_backend: str | None = None


@dataclass
class CallResult:
    value: Any
    devices: list[str]
    # One entry per positional argument: its gradient, or None (not a float tensor, or no path).
    input_grads: list[torch.Tensor | None] | None = None
    # Positions of tensor arguments whose values the call changed in place.
    inputs_mutated: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class ModuleSpec:
    """Build MultiHeadAttention(**init_kwargs), optionally load weights, optionally run forward."""
    init_kwargs: dict
    state_dict: dict[str, torch.Tensor] | None = None   # loaded with strict=True
    forward_kwargs: dict | None = None                 # x, context, padding_mask, is_causal; None: build only
    training: bool = False
    dtype: torch.dtype | None = None                   # module.to(dtype) after loading weights


@dataclass
class ModuleResult:
    parameters: dict[str, tuple[int, ...]]   # named_parameters -> shape, right after construction
    submodules: dict[str, str]               # direct children -> class name
    output: torch.Tensor | None = None
    devices: list[str] = field(default_factory=list)
    input_grads: dict[str, torch.Tensor | None] | None = None   # per tensor forward kwarg
    param_grads: dict[str, torch.Tensor | None] | None = None
    inputs_mutated: list[str] = field(default_factory=list)


class Gateway(ABC):
    @abstractmethod
    def call(self, function: str, args: tuple = (), kwargs: dict | None = None,
             options: CallOptions = CallOptions()) -> CallResult:
        """Call student.<function>(*args, **kwargs)."""

    @abstractmethod
    def run_module(self, spec: ModuleSpec, options: CallOptions = CallOptions()) -> ModuleResult:
        """Build (and maybe run) student.MultiHeadAttention as described by spec."""


# ---------------------------------------------------------------- shared helpers
# The engine's sandbox imports these too, so both gateways behave the same.

FORBIDDEN_IN_MANUAL_PATH = ("scaled_dot_product_attention", "multi_head_attention_forward")


class ForbidFusedAttention(torch.overrides.TorchFunctionMode):
    """Raises when PyTorch's fused attention is called, however the student imported it."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in FORBIDDEN_IN_MANUAL_PATH:
            raise RuntimeError(f"the manual path called torch's {name}, which this part forbids")
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def forbidding_fused(active: bool):
    if not active:
        yield
        return
    original_forward = torch.nn.MultiheadAttention.forward

    def refuse(*_args, **_kwargs):
        raise RuntimeError("the manual path used nn.MultiheadAttention, which this part forbids")

    torch.nn.MultiheadAttention.forward = refuse
    try:
        with ForbidFusedAttention():
            yield
    finally:
        torch.nn.MultiheadAttention.forward = original_forward


SDPA_BACKENDS = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION", "cudnn": "CUDNN_ATTENTION",
                 "math": "MATH"}


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
    found = []
    map_tensors(value, lambda tensor: found.append(tensor) or tensor)
    return found


def plain_result(tensor: torch.Tensor) -> torch.Tensor:
    """A detached plain tensor on the CPU (meta stays meta) with the same dtype and shape."""
    if type(tensor) is not torch.Tensor:
        raise StudentError("TypeError", f"returned a {type(tensor).__name__}, not a plain torch.Tensor")
    tensor = tensor.detach()
    if tensor.device.type == "meta":
        return torch.empty(tensor.shape, dtype=tensor.dtype, device="meta")
    return tensor.to("cpu", copy=True).contiguous()


def same_values(before: torch.Tensor, after: torch.Tensor) -> bool:
    if before.device.type == "meta":
        return True
    return torch.equal(before, after) or bool(torch.isnan(before).any() and torch.isnan(after).any())


def _gradients(outputs, grad_outputs, inputs):
    """d sum(out_i * g_i) / d inputs, None where an input is not on the path."""
    pairs = [(out, g.to(out.device, out.dtype)) for out, g in zip(flat_tensors(outputs), grad_outputs)
             if out.requires_grad]
    wanted = [t for t in inputs if t is not None]
    if not pairs or not wanted:
        return [None] * len(inputs)
    grads = iter(torch.autograd.grad([o for o, _ in pairs], wanted, [g for _, g in pairs], allow_unused=True))
    return [next(grads) if t is not None else None for t in inputs]


def execute_call(student, function: str, args, kwargs, options: CallOptions) -> CallResult:
    """Run one call on an imported student package. Used in-process and inside the sandbox."""
    if function not in FUNCTIONS:
        raise ValueError(f"{function} is not a graded function")
    device = torch.device(options.device)
    args = map_tensors(tuple(args), lambda t: t.detach().to(device).clone())
    kwargs = map_tensors(dict(kwargs or {}), lambda t: t.detach().to(device).clone())
    wants_grad = options.grad_outputs is not None
    differentiable = [a if isinstance(a, torch.Tensor) and a.is_floating_point() and wants_grad else None
                      for a in args]
    for tensor in differentiable:
        if tensor is not None:
            tensor.requires_grad_(True)
    before = [a.detach().clone() if isinstance(a, torch.Tensor) else None for a in args]
    torch.manual_seed(options.seed)
    try:
        with forbidding_fused(options.forbid_fused), restricting_sdpa(options.sdpa_backend):
            value = getattr(student, function)(*args, **kwargs)
            grads = _gradients(value, options.grad_outputs, differentiable) if wants_grad else None
    except StudentError:
        raise
    except BaseException as error:  # noqa: BLE001 - everything the student raises is reported, even SystemExit
        raise StudentError(type(error).__name__, str(error)) from None
    mutated = [i for i, (b, a) in enumerate(zip(before, args)) if b is not None and not same_values(b, a.detach())]
    devices = [str(t.device) for t in flat_tensors(value)]
    return CallResult(
        value=map_tensors(value, plain_result),
        devices=devices,
        input_grads=[plain_result(g) if g is not None else None for g in grads] if grads is not None else None,
        inputs_mutated=mutated,
    )


def execute_module(student, spec: ModuleSpec, options: CallOptions) -> ModuleResult:
    """Build and run one MultiHeadAttention. Used in-process and inside the sandbox."""
    device = torch.device(options.device)
    torch.manual_seed(options.seed)
    try:
        module = getattr(student, MODULE_CLASS)(**spec.init_kwargs)
        parameters = {name: tuple(p.shape) for name, p in module.named_parameters()}
        submodules = {name: type(child).__name__ for name, child in module.named_children()}
        if spec.forward_kwargs is None:
            return ModuleResult(parameters=parameters, submodules=submodules)
        if spec.state_dict is not None:
            module.load_state_dict({k: v.clone() for k, v in spec.state_dict.items()}, strict=True)
        if spec.dtype is not None:
            module.to(spec.dtype)
        module.to(device)
        module.train(spec.training)
        inputs = {key: value.detach().to(device).clone() if isinstance(value, torch.Tensor) else value
                  for key, value in spec.forward_kwargs.items()}
        wants_grad = options.grad_outputs is not None
        for value in inputs.values():
            if wants_grad and isinstance(value, torch.Tensor) and value.is_floating_point():
                value.requires_grad_(True)
        before = {k: v.detach().clone() for k, v in inputs.items() if isinstance(v, torch.Tensor)}
        torch.manual_seed(options.seed)
        with forbidding_fused(options.forbid_fused), restricting_sdpa(options.sdpa_backend):
            output = module(**inputs)
            input_grads = param_grads = None
            if wants_grad:
                names = [k for k, v in inputs.items() if isinstance(v, torch.Tensor) and v.requires_grad]
                params = list(module.named_parameters())
                grads = _gradients(output, options.grad_outputs, [inputs[n] for n in names] + [p for _, p in params])
                input_grads = {n: g for n, g in zip(names, grads[:len(names)])}
                param_grads = {n: g for (n, _), g in zip(params, grads[len(names):])}
    except StudentError:
        raise
    except BaseException as error:  # noqa: BLE001
        raise StudentError(type(error).__name__, str(error)) from None
    if not isinstance(output, torch.Tensor):
        raise StudentError("TypeError", f"forward returned a {type(output).__name__}, not a tensor")
    mutated = [k for k, b in before.items() if not same_values(b, inputs[k].detach())]
    as_plain = lambda grads: None if grads is None else {k: plain_result(g) if g is not None else None
                                                         for k, g in grads.items()}
    return ModuleResult(
        parameters=parameters, submodules=submodules, output=plain_result(output), devices=[str(output.device)],
        input_grads=as_plain(input_grads), param_grads=as_plain(param_grads), inputs_mutated=mutated,
    )


def import_student():
    """Import the submission's `student` package and every graded name in it.

    The handout's package imports its modules lazily; resolving the names here makes a broken
    module (a syntax error, a crash at import) an import failure of the whole submission, as
    the gradebook reports it. A name that is simply missing fails only its own tests.
    """
    student = importlib.import_module("student")
    for name in (*FUNCTIONS, MODULE_CLASS):
        try:
            getattr(student, name)
        except AttributeError:
            pass
    return student


class LocalGateway(Gateway):
    """Runs the submission in this process: for trusted folders only (project tests, instructors)."""

    def __init__(self, submission_dir: str | None = None):
        if submission_dir is not None:
            sys.path.insert(0, str(submission_dir))
        for name in [n for n in sys.modules if n == "student" or n.startswith("student.")]:
            del sys.modules[name]
        try:
            self.student = import_student()
        except BaseException as error:  # noqa: BLE001
            self.student = None
            self.import_error = StudentError(type(error).__name__, f"importing student failed: {error}")

    def _loaded(self):
        if self.student is None:
            raise self.import_error
        return self.student

    def call(self, function, args=(), kwargs=None, options=CallOptions()):
        return execute_call(self._loaded(), function, copy.copy(args), kwargs, options)

    def run_module(self, spec, options=CallOptions()):
        return execute_module(self._loaded(), spec, options)
