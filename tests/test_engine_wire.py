"""The wire between the trusted grader and a sandbox, and the trusted side's reading of what comes back
(grader/wire/protocol.py, messages.py, replies.py): fast, in-process, no sandbox."""
from __future__ import annotations

import io
import json
import os
import pickle
import socket
import struct
import sys
import time

import pytest
import torch

from grader.gateway import CallOptions, Gateway, ModuleSpec, module_path, replies
from grader.gateway.local import LocalGateway
from grader.wire import emulated, executor, layout, messages, protocol
from grader.wire.messages import CallReply, CallRequest, Failure, ModuleReply, ModuleRequest, Ready
from grader.wire.protocol import ProtocolError


def roundtrip(value):
    frame = protocol.encode(value)
    (size,) = protocol.LENGTH.unpack_from(frame)
    assert size == len(frame) - protocol.LENGTH.size
    return protocol.decode(frame[protocol.LENGTH.size:])


def frame_body(header: dict, data: bytes = b"") -> bytes:
    """A hand-made frame body (what a hostile sandbox can send)."""
    raw = json.dumps(header).encode()
    return protocol.HEADER_LENGTH.pack(len(raw)) + raw + data


# ---------------------------------------------------------------- values

@pytest.mark.parametrize("dtype", list(protocol.DTYPES.values()))
def test_tensors_of_every_allowed_dtype_arrive_with_their_values(dtype):
    source = (torch.arange(24, dtype=torch.float64).reshape(2, 3, 4) % 5 - 2).to(dtype)
    back = roundtrip(source)
    assert type(back) is torch.Tensor and back.dtype == dtype and back.shape == source.shape
    assert torch.equal(back, source)


def test_containers_scalars_dtypes_and_special_tensors_keep_their_structure():
    value = {"a": (torch.zeros(0, 3), torch.tensor(2.5), [1, 2.0, None, True, "text"]),
             "b": torch.empty(4, 5, device="meta"), "dtype": torch.bfloat16,
             "view": torch.arange(12.0).reshape(3, 4).t(), "nan": torch.tensor([float("nan"), float("inf")])}
    back = roundtrip(value)
    assert set(back) == set(value) and type(back["a"]) is tuple and back["a"][2] == [1, 2.0, None, True, "text"]
    assert back["a"][0].shape == (0, 3) and back["a"][1].item() == 2.5 and back["dtype"] is torch.bfloat16
    assert back["b"].device.type == "meta" and back["b"].shape == (4, 5)
    assert torch.equal(back["view"], value["view"]) and back["view"].is_contiguous()
    assert torch.isnan(back["nan"][0]) and torch.isinf(back["nan"][1])


def test_a_tensor_subclass_or_an_arbitrary_object_cannot_be_sent():
    class Liar(torch.Tensor):
        pass

    for value in (torch.zeros(2).as_subclass(Liar), object(), {1: "int key"}, torch.zeros(2).to_sparse()):
        with pytest.raises(ValueError):
            protocol.encode(value)


def test_a_billion_elements_over_four_bytes_is_refused_before_anything_is_allocated():
    """The attack of issue 11: a 1.5 KB frame whose one tensor claims a billion elements. The old wire
    (torch.load, then clone) materialised it; this one checks the element count against the bytes first."""
    body = frame_body({"value": {"tensor": 0}, "tensors": [["float32", [1_000_000_000], "cpu"]]}, b"\0\0\0\0")
    started = time.monotonic()
    with pytest.raises(ProtocolError, match="elements"):
        protocol.decode(body)
    assert time.monotonic() - started < 1.0
    within_count = frame_body({"value": {"tensor": 0}, "tensors": [["float32", [1000, 1000], "cpu"]]}, b"\0" * 4)
    with pytest.raises(ProtocolError, match="needs 4000000 bytes"):
        protocol.decode(within_count)


def test_the_old_wire_would_have_materialised_the_stride_zero_view():
    """Defence off: the same attack through torch.load(weights_only=True) + clone(), the old trusted path, on
    a smaller scale (ten million elements): a few bytes on the wire become 40 MB on the trusted side."""
    buffer = io.BytesIO()
    torch.save(torch.zeros(1).expand(10_000_000), buffer)
    assert len(buffer.getvalue()) < 2000
    loaded = torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)
    assert loaded.untyped_storage().nbytes() == 4 and loaded.detach().clone().nbytes == 40_000_000


@pytest.mark.parametrize("header, data, why", [
    ({"value": {"tensor": 0}, "tensors": [["float32", [2], "cpu"]]}, b"\0" * 9, "after the last tensor"),
    ({"value": {"tensor": 0}, "tensors": [["object", [2], "cpu"]]}, b"", "dtype"),
    ({"value": {"tensor": 0}, "tensors": [["float32", [2], "cuda"]]}, b"\0" * 8, "dtype"),
    ({"value": {"tensor": 0}, "tensors": [["float32", [-1], "cpu"]]}, b"", "shape"),
    ({"value": {"tensor": 0}, "tensors": [["float32", [1] * 9, "cpu"]]}, b"\0" * 4, "shape"),
    ({"value": {"tensor": 3}, "tensors": []}, b"", "unknown kind"),
    ({"value": {"pickle": "cos\nsystem"}, "tensors": []}, b"", "unknown kind"),
    ({"value": "x" * (protocol.MAX_TEXT + 1), "tensors": []}, b"", "too long"),
    ({"value": [[[[[[[[[[[[[[1]]]]]]]]]]]]]], "tensors": []}, b"", "nested"),
    ({"value": 1}, b"", "not {value, tensors}"),
])
def test_malformed_frames_are_refused(header, data, why):
    with pytest.raises(ProtocolError, match=why):
        protocol.decode(frame_body(header, data))


def test_a_pickle_in_a_frame_is_refused_and_never_run(tmp_path):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return exec, (f"open({str(marker)!r}, 'w').write('ran')",)

    for payload in (pickle.dumps({"ok": True, "value": Evil()}), _torch_saved(Evil())):
        with pytest.raises(ProtocolError):
            protocol.decode(payload)
    assert not marker.exists()


def _torch_saved(value) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def test_a_header_longer_than_the_frame_is_refused():
    with pytest.raises(ProtocolError, match="header"):
        protocol.decode(struct.pack("!I", 1000) + b"{}")


# ---------------------------------------------------------------- frames on a socket

def test_the_reader_gets_frames_one_at_a_time_and_passes_output_on():
    ours, theirs = socket.socketpair()
    got = []
    with ours, theirs:
        reader = protocol.FrameReader(ours)
        theirs.sendall(protocol.encode({"n": 1}) + protocol.encode([2]))
        assert reader.read(time.monotonic() + 5) == {"n": 1}
        assert reader.read(time.monotonic() + 5) == [2]
        import os
        read_end, write_end = os.pipe()
        reader.on_side_data[read_end] = got.append
        os.write(write_end, b"printed")
        theirs.sendall(protocol.encode("after"))
        assert reader.read(time.monotonic() + 5) == "after"
        reader.drain_side()
        assert b"".join(got) == b"printed"
        os.close(write_end)
        os.close(read_end)


def test_the_reader_stops_at_the_wall_clock_deadline_or_when_over_says_so():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        reader = protocol.FrameReader(ours)
        started = time.monotonic()
        with pytest.raises(protocol.TimedOut):
            reader.read(started + 0.2)
        assert 0.15 < time.monotonic() - started < 2
        calls = []
        with pytest.raises(protocol.TimedOut):
            reader.read(time.monotonic() + 30, over=lambda: calls.append(1) or len(calls) >= 3, interval=0.01)
        assert len(calls) == 3


def test_an_oversized_frame_is_refused_from_its_length_alone():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(protocol.LENGTH.pack(protocol.MAX_FRAME + 1))
        with pytest.raises(ProtocolError, match="limit"):
            protocol.FrameReader(ours).read(time.monotonic() + 5)


def test_a_closed_socket_is_reported_as_closed():
    ours, theirs = socket.socketpair()
    theirs.close()
    with ours, pytest.raises(protocol.Closed):
        protocol.FrameReader(ours).read(time.monotonic() + 5)


# ---------------------------------------------------------------- typed messages

def decoded(message, *allowed):
    return messages.decode(roundtrip_frame(message), *allowed)


def roundtrip_frame(message):
    frame = message.encode()
    return protocol.decode(frame[protocol.LENGTH.size:])


@pytest.mark.parametrize("message", [
    CallRequest("split_heads", (torch.ones(2, 3, 4), 2), {"dim": -1},
                CallOptions("meta", 3, (torch.ones(2),), "math", default_device="cpu")),
    ModuleRequest(ModuleSpec({"embed_dim": 4, "num_heads": 2}, {"q_proj.weight": torch.eye(4)},
                             {"x": torch.ones(1, 2, 4)}, training=True, dtype=torch.float64)),
    Ready({"masking": "ModuleNotFoundError: No module named einops"}, ["escape attempt: open /etc/shadow"]),
    Failure("ValueError", "bad", []),
    CallReply((torch.ones(2), torch.zeros(1)), ["cpu", "cpu"], None, [torch.ones(1), None], ["x"], []),
    ModuleReply({"w": torch.ones(2)}, torch.ones(1), ["cpu"], {"x": None}, None, {"x": torch.ones(1)}, [], [],
                [{"query": torch.ones(1, 2), "attn_mask": None, "dropout_p": 0.0, "is_causal": False}]),
])
def test_every_message_survives_its_encode_and_decode(message):
    back = decoded(message, type(message))
    assert type(back) is type(message)
    for name in messages.field_types(type(message)):
        mine, theirs = getattr(message, name), getattr(back, name)
        assert repr(mine) == repr(theirs), name


def test_a_message_of_another_kind_or_with_wrong_fields_is_refused():
    with pytest.raises(ProtocolError, match="kind"):
        decoded(Ready(), CallReply, Failure)
    with pytest.raises(ProtocolError, match="fields"):
        messages.decode({"kind": "ready", "events": [], "extra": 1}, Ready)
    with pytest.raises(ProtocolError, match="type"):
        messages.decode({"kind": "failure", "type_name": 3, "message": "m", "events": []}, Failure)
    with pytest.raises(ProtocolError, match="type"):
        messages.decode({"kind": "ready", "unloadable": {}, "events": ["ok", 5]}, Ready)
    with pytest.raises(ProtocolError, match="type"):
        messages.decode({"kind": "ready", "unloadable": {"masking": 5}, "events": []}, Ready)
    with pytest.raises(ProtocolError, match="not a message"):
        messages.decode(["ready"], Ready)


# ---------------------------------------------------------------- the trusted side's reading of replies

def call_reply(value, args_after, devices=None, grads=None, attention=()):
    devices = devices if devices is not None else ["cpu"] * len(replies.flat_tensors(value))
    return CallReply(value, devices, grads, args_after, list(attention), [])


def test_in_place_changes_are_found_from_the_arguments_after_the_call():
    args = (torch.ones(2, 3), 2, torch.arange(4.0))
    untouched = replies.call_result(call_reply(torch.zeros(1), [args[0].clone(), None, args[2].clone()]), args, "cpu")
    assert untouched.inputs_mutated == []
    changed = replies.call_result(call_reply(torch.zeros(1), [args[0].clone(), None, torch.full((4,), float("nan"))]),
                                  args, "cpu")
    assert changed.inputs_mutated == [2]
    resized = replies.call_result(call_reply(torch.zeros(1), [torch.ones(3, 2), None, args[2].clone()]), args, "cpu")
    assert resized.inputs_mutated == [0]


def test_a_reply_that_contradicts_its_call_is_refused():
    args = (torch.ones(2),)
    for reply, why in [
        (call_reply(torch.zeros(1), []), "arguments after"),
        (call_reply(torch.zeros(1), [None]), "not what was sent"),
        (call_reply(torch.zeros(1), [torch.empty(2, device="meta")]), "meta"),
        (call_reply(torch.zeros(1), [torch.ones(2)], devices=["meta"]), "arrived as a cpu"),
        (call_reply(torch.zeros(1), [torch.ones(2)], devices=[]), "devices do not match"),
        (call_reply(torch.zeros(1), [torch.ones(2)], devices=["tpu:banana"]), "unknown device"),
        (call_reply(torch.zeros(1), [torch.ones(2)], devices=["emulated:0"]), "arrived as a cpu"),
        (call_reply(on_the_wire_from_the_emulated_device(torch.zeros(1)), [torch.ones(2)]), "arrived as a emulated"),
        (call_reply(torch.zeros(1), [torch.ones(2)], grads=[torch.ones(2), None]), "input_grads"),
    ]:
        with pytest.raises(ProtocolError, match=why):
            replies.call_result(reply, args, "cpu")


def on_the_wire_from_the_emulated_device(tensor: torch.Tensor) -> torch.Tensor:
    """A tensor as the wire decodes one the sandbox sent from the emulated device."""
    return protocol.decode(protocol.encode(tensor.to(emulated.device()))[protocol.LENGTH.size:])


def test_a_result_of_the_emulated_device_is_believed_only_where_the_wire_says_so():
    args = (torch.ones(2),)
    here = on_the_wire_from_the_emulated_device
    result = replies.call_result(call_reply(here(torch.zeros(1)), [here(torch.ones(2))], devices=["emulated:0"]),
                                 args, "emulated")
    assert result.devices == ["emulated:0"] and result.inputs_mutated == []
    with pytest.raises(ProtocolError, match="came back as a cpu tensor for a call on emulated"):
        replies.call_result(call_reply(here(torch.zeros(1)), [torch.ones(2)], devices=["emulated:0"]), args,
                            "emulated")


def test_a_call_on_the_meta_device_reports_no_change_it_cannot_see():
    args = (torch.ones(2),)
    result = replies.call_result(call_reply(torch.empty(1, device="meta"), [torch.empty(2, device="meta")],
                                            devices=["meta"]), args, "meta")
    assert result.inputs_mutated == [] and result.devices == ["meta"]


def test_parameters_are_named_and_shaped_by_the_tensors_that_came_back():
    reply = ModuleReply({"q_proj.weight": torch.ones(4, 4), "q_proj.bias": torch.ones(4)})
    assert replies.module_result(reply, None, "cpu").parameters == {"q_proj.weight": (4, 4), "q_proj.bias": (4,)}
    with pytest.raises(ProtocolError, match="named tensors"):
        replies.module_result(ModuleReply({"q_proj.weight": (4, 4)}), None, "cpu")


def test_a_modules_parameters_travel_as_shapes_without_their_values():
    """The trusted side reads names and shapes only: the executor sends meta tensors, no bytes of values."""
    student = type("Student", (), {"MultiHeadAttention": lambda embed_dim, num_heads: torch.nn.Linear(embed_dim, 3)})
    done = executor.execute_module(student, ModuleSpec({"embed_dim": 5, "num_heads": 1}))
    assert {name: (tuple(p.shape), p.device.type) for name, p in done.parameters.items()} == {
        "weight": ((3, 5), "meta"), "bias": ((3,), "meta")}
    frame = ModuleReply(done.parameters).encode()
    (header,) = protocol.HEADER_LENGTH.unpack_from(frame, protocol.LENGTH.size)
    assert len(frame) == protocol.LENGTH.size + protocol.HEADER_LENGTH.size + header   # no data after the header
    assert replies.module_result(messages.decode(protocol.decode(frame[protocol.LENGTH.size:]), ModuleReply), None,
                                 "cpu").parameters == {"weight": (3, 5), "bias": (3,)}


def test_a_module_forward_reply_is_checked_against_its_inputs():
    forward = {"x": torch.ones(1, 2, 4), "is_causal": True}
    good = ModuleReply({}, torch.ones(1, 2, 4), ["cpu"], None, None, {"x": torch.ones(1, 2, 4)})
    assert replies.module_result(good, forward, "cpu").inputs_mutated == []
    mutated = ModuleReply({}, torch.ones(1, 2, 4), ["cpu"], None, None, {"x": torch.zeros(1, 2, 4)})
    assert replies.module_result(mutated, forward, "cpu").inputs_mutated == ["x"]
    with pytest.raises(ProtocolError, match="inputs after"):
        replies.module_result(ModuleReply({}, torch.ones(1), ["cpu"], None, None, {}), forward, "cpu")
    with pytest.raises(ProtocolError, match="no output"):
        replies.module_result(ModuleReply({}, None, [], None, None, {"x": torch.ones(1)}), forward, "cpu")


def test_a_forbidden_path_becomes_a_flag_and_a_note_against_the_test_that_ran_it():
    gateway = LocalGateway.__new__(LocalGateway)
    Gateway.__init__(gateway)
    gateway.test = "grading_tests/test_part5_multihead.py::test_a"
    gateway.note_path(None, ["scaled_dot_product_attention"])            # a module only built: no path ran
    gateway.note_path("manual", [])
    gateway.note_path("fused", ["self._fused_attention", "scaled_dot_product_attention"])
    gateway.note_path("fused-step", ["scaled_dot_product_attention"])    # the fused step called on its own
    assert gateway.flags == [] and gateway.forbidden == {}
    gateway.note_path("manual", ["multi_head_attention_forward"])
    gateway.test = "grading_tests/test_part6_parity.py::test_b"
    gateway.note_path("fused", ["self._fused_attention"])
    gateway.test = "grading_tests/test_part6_parity.py::test_c"
    gateway.note_path("fused", ["scaled_dot_product_attention"])         # SDPA inline, not through the step
    assert len(gateway.flags) == 3
    assert gateway.flags[0].startswith("forbidden call: the manual path called torch's multi_head_attention_forward")
    assert gateway.flags[0].endswith("(test_a)")
    assert "fused path never called" in gateway.flags[1]
    assert "never went through self._fused_attention" in gateway.flags[2]
    assert list(gateway.forbidden) == ["grading_tests/test_part5_multihead.py::test_a",
                                       "grading_tests/test_part6_parity.py::test_b",
                                       "grading_tests/test_part6_parity.py::test_c"]


@pytest.mark.parametrize(("init", "forward", "path"), [
    ({"embed_dim": 4, "num_heads": 2}, None, None),
    ({"embed_dim": 4, "num_heads": 2}, {"x": torch.ones(1, 2, 4)}, "manual"),
    ({"embed_dim": 4, "num_heads": 2, "fused": False}, {"x": torch.ones(1, 2, 4)}, "manual"),
    ({"embed_dim": 4, "num_heads": 2, "fused": True}, {"x": torch.ones(1, 2, 4)}, "fused"),
], ids=["built-only", "default", "fused-false", "fused-true"])
def test_the_path_of_a_module_call_is_known_from_the_call_itself(init, forward, path):
    assert module_path(ModuleSpec(init_kwargs=init, forward_kwargs=forward)) == path
    step = ModuleSpec(init_kwargs=init, forward_kwargs=forward, method="_fused_attention")
    assert module_path(step) == (None if forward is None else "fused-step")


def test_forward_is_seen_going_through_the_fused_step_whichever_way_it_calls_it():
    """self._fused_attention(...) and type(self)._fused_attention(self, ...) are both noted; the class is left
    as it was."""
    from grader.wire import executor

    class Base(torch.nn.Module):
        def _fused_attention(self, x):
            return x * 2

    class Module(Base):
        def forward(self, x):
            return self._fused_attention(x) + type(self)._fused_attention(self, x)

    module, seen = Module(), []
    with executor.noting_steps(module, seen, "forward"):
        assert torch.equal(module(torch.ones(2)), 4 * torch.ones(2))
    assert seen == ["self._fused_attention"] * 2
    assert "_fused_attention" not in Module.__dict__ and Module()._fused_attention(torch.ones(1)) == 2


def test_the_dispatchers_watch_sees_a_call_hidden_from_the_function_watch(monkeypatch):
    q = torch.randn(1, 2, 3, 4)

    def hidden():
        with torch._C.DisableTorchFunction():
            torch.nn.functional.scaled_dot_product_attention(q, q, q)

    def seen_while(run) -> list[str]:
        seen: list[str] = []
        with executor.watching_attention(seen):
            run()
        return seen

    assert seen_while(hidden) == ["scaled_dot_product_attention"]
    assert seen_while(lambda: torch.softmax(q @ q.transpose(-2, -1), -1) @ q) == []   # manual math is not a call
    # The defence off (no kernel names, none remembered from the calls above): the hidden call goes unseen.
    monkeypatch.setattr(executor, "ATTENTION_KERNELS", {})
    monkeypatch.setattr(executor, "_KERNELS_SEEN", {})
    assert seen_while(hidden) == []


# ---------------------------------------------------------------- layouts (issue 29, class 2)

LAYOUTS = {
    "transposed": lambda x: x.transpose(1, 2), "sliced": lambda x: x[:, 1:, ::2],
    "expanded": lambda x: x[:, :1].expand(2, 5, 4), "offset": lambda x: x.reshape(-1)[5:17].view(3, 4),
    "permuted": lambda x: x.permute(2, 0, 1), "plain": lambda x: x,
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_a_request_keeps_each_tensors_layout_on_the_wire_and_on_the_device(name):
    """A hidden test's view reaches student code as the same view (strides and offset), on either device."""
    view = LAYOUTS[name](torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0)))
    frame = CallRequest("split_heads", (view,), {}).encode()
    arrived = messages.decode(protocol.decode(frame[protocol.LENGTH.size:], views=True), *messages.REQUESTS).args[0]
    assert torch.equal(arrived, view) and arrived.stride() == view.stride()
    assert arrived.storage_offset() == min(view.storage_offset(), protocol.MAX_VIEW_OFFSET)
    for device in ("cpu", emulated.device()):
        placed = layout.moved(arrived, torch.device(device))
        assert placed.stride() == view.stride() and torch.equal(emulated.to_plain(placed), view)


def test_without_the_layout_the_view_would_arrive_contiguous():
    """Defence off: a request encoded as the trusted side's replies are (values only) loses the strides, which is
    how an as_strided that assumes contiguous strides scored 100."""
    view = torch.randn(2, 3, 4).transpose(1, 2)
    frame = protocol.encode(view)
    assert protocol.decode(frame[protocol.LENGTH.size:], views=True).stride() != view.stride()


def test_the_trusted_side_never_decodes_a_view():
    frame = CallRequest("split_heads", (torch.randn(2, 3, 4).transpose(1, 2),), {}).encode()
    with pytest.raises(ProtocolError, match="malformed tensor entry"):
        protocol.decode(frame[protocol.LENGTH.size:])


@pytest.mark.parametrize("view, why", [
    ({"stride": [-1, 1], "offset": 0}, "strides"), ({"stride": [1], "offset": 0}, "strides"),
    ({"stride": [1, 1], "offset": protocol.MAX_VIEW_OFFSET + 1}, "offset"), ({"stride": [1, 1]}, "malformed"),
    ({"stride": [1 << 40, 1], "offset": 0}, "over the limit"),
])
def test_a_view_that_claims_too_much_is_refused_before_anything_is_allocated(view, why):
    body = frame_body({"value": {"tensor": 0}, "tensors": [["float32", [2, 2], "cpu", view]]}, b"\0" * 12)
    with pytest.raises(ProtocolError, match=why):
        protocol.decode(body, views=True)


# ---------------------------------------------------------------- a waiting sandbox runs no student code

def test_a_sandbox_imports_the_submission_only_when_the_trusted_side_says_go(tmp_path):
    """Issue 31, class 2, on the engine's side: a spare is locked down and waits; its student code runs only
    once it is taken over, so two sandboxes of one submission never run student code at the same time."""
    from grader.contain import tripwires
    from grader.run import sandbox
    package = tmp_path / "student"
    package.mkdir()
    marks_read, marks_write = os.pipe()
    (package / "__init__.py").write_text(f"import os\nos.write({marks_write}, b'imported')\n")
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        try:
            ours.close()
            sys.path.insert(0, str(tmp_path))
            sys.modules.pop("student", None)
            sandbox.serve(theirs, tripwires.Tripwires(str(tmp_path), [], {}), str(tmp_path))
        finally:
            os._exit(0)
    theirs.close()
    try:
        os.set_blocking(marks_read, False)
        time.sleep(0.5)
        with pytest.raises(BlockingIOError):
            os.read(marks_read, 100)          # waiting: nothing of the submission has run
        ours.sendall(messages.Go().encode())
        ready = messages.decode(protocol.FrameReader(ours).read(time.monotonic() + 60), *messages.AT_START)
        assert isinstance(ready, Ready) and os.read(marks_read, 100) == b"imported"
    finally:
        ours.close()
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(marks_read)
        os.close(marks_write)
