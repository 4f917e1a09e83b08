"""LocalGateway: the hidden suite's `student` fixture answered in this process, for trusted folders only.

    pytest grading_tests --submission DIR       (grading_tests/conftest.py makes one)

It imports the submission here (no sandbox, no limits: the project's own tests and an instructor trying the
suite on a trusted folder use it) and runs each call with the executor the sandbox runs. What comes back
takes the sandbox's road to the test: encoded as the wire encodes it, decoded and checked by the trusted
side's replies.py, so a test sees the same plain data, the same devices and the same refusals here as
through the engine.
"""
from __future__ import annotations

import os
import sys

import torch

from grader.gateway import (
    CallOptions,
    Gateway,
    StudentError,
    not_imported,
    replies,
)
from grader.wire import emulated, executor, messages, protocol
from grader.wire.messages import CallReply, ModuleReply


def by_wire(reply, kind):
    """reply as the trusted side receives it from a sandbox."""
    body = reply.encode()[protocol.LENGTH.size:]
    return messages.decode(protocol.decode(body), kind)


class LocalGateway(Gateway):
    def __init__(self, submission_dir: str | None = None):
        super().__init__()
        # Student code runs in this process: on a GPU here when there is one. The emulated device is registered
        # only without one (registered beside CUDA it would take CUDA's place as torch's accelerator).
        if torch.cuda.is_available():
            self.second_device = "cuda"
        else:
            emulated.install()
        if submission_dir is not None:
            sys.path.insert(0, str(submission_dir))
            self.note_source(os.path.join(submission_dir, "student"))
        for name in [n for n in sys.modules if n == "student" or n.startswith("student.")]:
            del sys.modules[name]
        executor.disable_compilation()
        try:
            self.student, self.unloadable = executor.import_student()
        except BaseException as error:  # noqa: BLE001 - any failure at import, SystemExit too, is the import's report
            self.student, self.unloadable = None, {}
            self.import_error = StudentError(type(error).__name__, f"importing student failed: {error}")

    def _loaded(self, name: str):
        if self.student is None:
            raise StudentError(self.import_error.type_name, self.import_error.message)
        if name in self.unloadable:
            raise not_imported(name, self.unloadable[name])
        return self.student

    def start_afresh(self) -> None:
        """Nothing to do: the instructor's trusted folder runs in the grader's own process (no memory attack to
        fear from it)."""

    def call(self, function, args=(), kwargs=None, options=CallOptions()):
        args = tuple(args)
        try:
            done = executor.execute_call(self._loaded(function), function, args, kwargs, options)
        except executor.StudentFailure as failure:
            raise StudentError(failure.type_name, failure.message) from None
        reply = by_wire(CallReply(done.value, done.devices, done.input_grads, done.args_after, done.attention_calls),
                        CallReply)
        self.note_path("manual", reply.attention_calls)
        return replies.call_result(reply, args, options.device)

    def run_module(self, spec, options=CallOptions()):
        try:
            done = executor.execute_module(self._loaded(executor.MODULE_CLASS), spec, options)
        except executor.StudentFailure as failure:
            raise StudentError(failure.type_name, failure.message) from None
        reply = by_wire(ModuleReply(done.parameters, done.output, done.devices, done.input_grads, done.param_grads,
                                    done.inputs_after, done.attention_calls, sdpa_calls=done.sdpa_calls), ModuleReply)
        self.note_module(spec, options.device, reply)
        return replies.module_result(reply, spec.forward_kwargs, options.device)
