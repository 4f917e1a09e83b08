"""The one door from the grading tests to a submission's code: the test-side contract.

Tests never import `student`; they call a Gateway. Two implementations share these semantics:

- LocalGateway (grader/gateway/local.py) imports the submission into this process. It is for the
  project's own tests and for instructors trying the suite on a trusted folder.
- The grading engine's SandboxGateway (grader/gateway/client.py) runs the same calls in a
  locked-down process and gets plain data back.

Both run the calls with grader/wire/executor.py (the code that touches student objects);
what decides points is derived here, on the grader's side, from the data that comes back.

Semantics every implementation keeps:
- The graded names are those of the student API (FUNCTIONS, MODULE_CLASS; their docstrings in
  the student/ package are the contract students read).
- Arguments are tensors, Python scalars, None, strings, dtypes, and lists/tuples/dicts of these.
  The caller keeps its own copies: whatever the student's code does to the tensors it receives
  never reaches the caller's objects.
- `device` moves every tensor argument (and the module) there before the call.
- `seed` seeds torch's generators right before the call (executor.seed_random), so dropout is reproducible.
- `sdpa_backend` ("flash", "efficient", "cudnn" or "math") lets F.scaled_dot_product_attention
  use only that backend during the call.
- The path a call exercises is known from the call itself: a module built with fused=True runs the
  fused path, every other call the manual one. A manual path that called torch's fused attention, or
  a fused path whose right answer did not come from F.scaled_dot_product_attention given the graded
  call's heads (the arguments of its calls held against the grader's own: sdpa_calls.py), is flagged
  and noted against the test that ran it (`forbidden`); the spec's forbidden_calls setting says whether that test then
  earns its points (grader/suite.py applies it).
- `student.<name>(*args, options=CallOptions(), **kwargs)` calls the graded function <name>: only the
  names the spec declares exist, so a test that calls any other fails when it is collected, not per student.
- Results come back detached, as plain torch.Tensor objects (not subclasses), in the structure the
  student's code returned (tensor, tuple, list), on the CPU; the device each returned tensor had
  is reported in `devices`. Tensors on the `meta` device stay on `meta`.
- `inputs_mutated` names the tensor arguments whose values the call changed in place, found by
  comparing the arguments after the call with the caller's own copies.
- An exception raised by the student's code becomes StudentError carrying the exception's class
  name and message (never the object itself).
"""
from __future__ import annotations

import pathlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import torch

from grader import source_rules
from grader.gateway import sdpa_calls
from grader.wire.emulated import NAME as EMULATED
from grader.wire.executor import (
    FUNCTIONS,
    MODULE_CLASS,
    MODULE_METHODS,
    SDPA_BACKENDS,
    WENT_THROUGH,
    CallOptions,
    ModuleSpec,
    restricting_sdpa,
    vector_jacobian,
)

__all__ = ["FUNCTIONS", "GRADER_ERRORS", "MODULE_CLASS", "SDPA_BACKENDS", "CallOptions", "CallResult", "Gateway",
           "GradedFunction", "ModuleResult", "ModuleSpec", "StudentError", "restricting_sdpa", "vector_jacobian"]

FUSED_ATTENTION = "scaled_dot_product_attention"
# The module's graded method besides forward: the fused path's attention step, which forward(fused=True) must go
# through (the executor notes each call of it as WENT_THROUGH + its name among the attention calls). None when
# the spec grades no such method (a course without Part 6).
FUSED_STEP = next((method for method in MODULE_METHODS if method != "forward"), None)


# The type names the grader itself gives a StudentError (grader/gateway/client.py): an answer
# refused as malformed or forged, the grader's own failure, a timeout, a crashed sandbox, a name not imported.
GRADER_ERRORS = ("ProtocolError", "GraderError", "Timeout", "Crashed", "NotImported")


class StudentError(Exception):
    """The student's code raised, crashed, or timed out."""

    def __init__(self, type_name: str, message: str):
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


NOT_IMPORTED = "NotImported"   # the type the gateway gives a call of a name whose module failed to import


def not_imported(name: str, why: str) -> StudentError:
    """The answer to every call of a graded name that could not be imported (never the contract's own error)."""
    return StudentError(NOT_IMPORTED, f"student.{name} could not be imported: {why}")


@dataclass
class CallResult:
    value: Any
    devices: list[str]
    # One entry per positional argument: its gradient, or None (not a float tensor, or no path).
    input_grads: list[torch.Tensor | None] | None = None
    # Positions of tensor arguments whose values the call changed in place.
    inputs_mutated: list[int] = field(default_factory=list)


@dataclass
class ModuleResult:
    parameters: dict[str, tuple[int, ...]]   # named_parameters -> shape, right after construction
    output: torch.Tensor | None = None
    devices: list[str] = field(default_factory=list)
    input_grads: dict[str, torch.Tensor | None] | None = None   # per tensor forward kwarg
    param_grads: dict[str, torch.Tensor | None] | None = None
    inputs_mutated: list[str] = field(default_factory=list)


class Gateway(ABC):
    """Calls into a submission. `flags` collects what an instructor should look at; `forbidden` maps the id of
    each test whose path broke the forbidden-call rule to why (the suite's plugin sets `test`); `stopped` says
    why no call runs any more, once a limit of the whole submission is reached ("" until then)."""

    # The device the placement checks put student code on besides the CPU: "cuda" only where the student's code
    # can reach a GPU (LocalGateway on a GPU machine); an engine's sandbox reaches none, so there the emulated one.
    second_device = EMULATED

    def __init__(self) -> None:
        self.flags: list[str] = []
        self.forbidden: dict[str, str] = {}
        self.test = ""
        self.stopped = ""
        self.hiding = ""   # why the watches of the forbidden-call rule may have been blind (note_source) ...
        self.hiding_parts: set[int] = set()   # ... in the tests of these parts

    def note_source(self, package) -> None:
        """What the submission's source (package: its student/ folder) shows about the forbidden-call rule, read
        as text (source_rules.py): code that switches torch's function or dispatch modes off makes every test of
        the parts that run it break the rule; other reaches into torch's private parts are only flagged."""
        hiding, private = source_rules.read(pathlib.Path(package))
        if hiding:
            self.hiding = (f"the submission's code switches off the modes that watch torch's calls ({hiding[0]}), "
                           f"so no test can tell which path it took")
            self.hiding_parts = source_rules.parts_running(hiding)
            parts = ", ".join(map(str, sorted(self.hiding_parts)))
            self.flags.append(f"forbidden call: {self.hiding} (Part(s) {parts} run that code)")
        if private:
            shown = "; ".join(private[:3]) + (" ..." if len(private) > 3 else "")
            self.flags.append(f"reaches torch's private parts (a look, not a cost): {shown}")

    def __getattr__(self, name: str):
        """student.<name>: a graded function of the spec, called through this gateway."""
        if name in FUNCTIONS:
            return GradedFunction(self, name)
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(f"{name!r} is not a graded function of the assignment (assignment/assignment.toml "
                             f"declares {', '.join(FUNCTIONS)})")

    @abstractmethod
    def start_afresh(self) -> None:
        """The next call runs in another process than the last one did: a test that compares two answers asks for
        the second afresh, so the first, remembered, cannot stand in for it."""

    @abstractmethod
    def call(self, function: str, args: tuple = (), kwargs: dict | None = None,
             options: CallOptions = CallOptions()) -> CallResult:
        """Call student.<function>(*args, **kwargs)."""

    @abstractmethod
    def run_module(self, spec: ModuleSpec, options: CallOptions = CallOptions()) -> ModuleResult:
        """Build (and maybe run) student.MultiHeadAttention as described by spec."""

    def note_module(self, spec: ModuleSpec, device: str, reply) -> None:
        """The forbidden-call rule for a module call `spec` run on `device` and answered by `reply` (a ModuleReply):
        note_path, then, on a fused path that did call SDPA, whether its SDPA calls were the graded call's
        (sdpa_calls.made_the_call)."""
        path = module_path(spec)
        self.note_path(path, reply.attention_calls)
        if path in ("fused", "fused-step") and FUSED_ATTENTION in reply.attention_calls and not \
                sdpa_calls.made_the_call(path, spec, device, list(reply.sdpa_calls), reply.output):
            self._forbid(sdpa_calls.WHY)

    def note_path(self, path: str | None, calls: list[str]) -> None:
        """The forbidden-call rule, for a call that exercised `path` ("manual", "fused" (forward), "fused-step"
        (the fused step alone) or None) and made the attention calls `calls` (torch's, and the module's own fused
        step): flag a manual path that called torch's attention, a fused forward that never went through the fused
        step, or a fused path that never called F.scaled_dot_product_attention, and note it against the running
        test."""
        torchs = [call for call in calls if not call.startswith(WENT_THROUGH)]
        if path == "manual" and torchs:
            why = f"the manual path called torch's {torchs[0]}, which the handout forbids there"
        elif path == "fused" and FUSED_STEP and WENT_THROUGH + FUSED_STEP not in calls:
            why = f"forward(fused=True) never went through self.{FUSED_STEP}, which the handout requires"
        elif path in ("fused", "fused-step") and FUSED_ATTENTION not in calls:
            why = f"the fused path never called torch's F.{FUSED_ATTENTION}, which it must go through"
        else:
            return
        self._forbid(why)

    def _forbid(self, why: str) -> None:
        """Flag `why` once and note it against the running test."""
        test = self.test.split("::")[-1] or "a call"
        flag = f"forbidden call: {why} ({test})"
        if flag not in self.flags:
            self.flags.append(flag)
        self.forbidden.setdefault(self.test, why)


def module_path(spec: ModuleSpec) -> str | None:
    """The path a module call exercises: none when it was only built."""
    if spec.forward_kwargs is None:
        return None
    if spec.method != "forward":
        return "fused-step"
    return "fused" if spec.init_kwargs.get("fused") else "manual"


class GradedFunction:
    """student.<name>(*args, options=CallOptions(), **kwargs): one graded function, called through a gateway."""

    def __init__(self, gateway: Gateway, name: str):
        self.gateway, self.name = gateway, name

    def __call__(self, *args, options: CallOptions = CallOptions(), **kwargs) -> CallResult:
        return self.gateway.call(self.name, args, kwargs, options)

    def __repr__(self) -> str:
        return f"student.{self.name}"


# ---------------------------------------------------------------- deciding from data, on the grader's side

def same_values(before: torch.Tensor, after) -> bool:
    """after (a tensor that came back) holds the values of before (the caller's own copy). A tensor on the
    meta device holds no values: the same, always."""
    if before.device.type == "meta" or (isinstance(after, torch.Tensor) and after.device.type == "meta"):
        return True
    if not isinstance(after, torch.Tensor) or after.shape != before.shape or after.dtype != before.dtype:
        return False
    before = before.detach().cpu()
    if torch.equal(before, after):   # the common answer in one step (a NaN anywhere makes it False: see below)
        return True
    if before.is_floating_point() or before.is_complex():
        nan_before, nan_after = torch.isnan(before), torch.isnan(after)
        return torch.equal(nan_before, nan_after) and torch.equal(before[~nan_before], after[~nan_after])
    return torch.equal(before, after)


def mutated_positions(args, after) -> list[int]:
    """Positions of tensor arguments (the caller's own copies) whose values differ after the call."""
    return [i for i, (sent, back) in enumerate(zip(args, after, strict=False))
            if isinstance(sent, torch.Tensor) and not same_values(sent, back)]


def mutated_names(inputs: dict, after: dict) -> list[str]:
    """Names of tensor forward kwargs (the caller's own copies) whose values differ after the call."""
    return [name for name, sent in inputs.items()
            if isinstance(sent, torch.Tensor) and not same_values(sent, after.get(name))]


def shapes_of(parameters: dict[str, torch.Tensor]) -> dict[str, tuple[int, ...]]:
    return {name: tuple(int(s) for s in tensor.shape) for name, tensor in parameters.items()}


