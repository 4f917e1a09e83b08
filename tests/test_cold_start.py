"""What keeps grading one submission fast from a cold start (issue 11's target; benchmarks/bench_grading.py
measures it), each held here as a property rather than as a time:

- gradients through one scalar are the gradients torch.autograd.grad gives with explicit grad_outputs, bit for
  bit, and neither they nor the suite's common paths load torch's symbolic-shapes machinery (sympy);
- the first sandbox serves the CPU tests while a second one warms up the emulated second device, and takes over
  at the first call that needs that device: every test that runs student code there is marked second_device
  (the engine runs those last), and the results keep the suite's order whatever order the tests ran in;
- a test that a skipif mark of a plain True skips (the CUDA tests without a GPU) is recorded at collection, not
  taken through pytest's setup, with the outcome and message pytest's own skipping gives it;
- at the end, nobody waits on a poll or on the kernel taking a process's memory back: the worker hears of its
  trusted process's exit through a descriptor (processes.exit_notice), and the batch reaps the closed template
  beside the rest of its ending.
"""
from __future__ import annotations

import ast
import os
import select
import subprocess
import sys
import threading

import pytest
import torch

from grader.contain import processes
from grader.contain.limits import Limits
from grader.gateway import CallOptions, ModuleSpec, StudentError
from grader.gateway.client import SandboxGateway, SessionLog, uses_second_device
from grader.paths import REPO
from grader.run import pool
from grader.run.pool import Template
from grader.run.trusted import SECOND_DEVICE_FIXTURE, _SecondDeviceLast
from grader.scoring import entry_test
from grader.suite import GradingPlugin
from grader.wire import messages
from grader.wire.executor import vector_jacobian
from tests.fake_sandbox import FakeSpawner
from tests.patience import SAFETY_NET_S, process_state

PLACEMENT_HELPERS = {"call_placed", "check_placement", "run_module_placed"}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_gradients_through_one_scalar_equal_autograd_grad_bit_for_bit(dtype):
    generator = torch.Generator().manual_seed(7)
    x = torch.randn(2, 3, 5, 8, generator=generator).to(dtype).requires_grad_(True)
    w = torch.randn(8, 8, generator=generator).to(dtype).requires_grad_(True)
    out = torch.nn.functional.scaled_dot_product_attention(x, x @ w, x, is_causal=True)
    weights = torch.softmax(x @ w @ x.transpose(-2, -1), dim=-1)
    upstream = [torch.randn(out.shape, generator=generator).to(dtype), torch.randn(weights.shape, generator=generator)]
    theirs = torch.autograd.grad([out, weights], [x, w], [g.to(dtype) for g in upstream], retain_graph=True)
    ours = vector_jacobian([out, weights], upstream, [x, w])
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs, strict=True))


def test_gradients_through_one_scalar_refuse_a_grad_output_of_another_shape():
    x = torch.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of \(2, 1\)"):
        vector_jacobian([x * 2], [torch.ones(2, 1)], [x])   # a product would have broadcast it


def _printed_by(probe: str) -> list[str]:
    """The words a fresh Python prints running probe in the repository (it must exit 0)."""
    proc = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_the_template_can_start_before_the_command_loads_anything_else():
    """python -m grader starts the template (torch's import, over a second) first of all: template_boot loads nothing
    but the raw socket module and its packages (the command's own imports took 25-40 ms before the fork)."""
    loaded = _printed_by("import sys; before = set(sys.modules); import grader.run.template_boot\n"
                         "print(*sorted(set(sys.modules) - before))")
    assert "grader.run.template_boot" in loaded
    assert set(loaded) <= {"__future__", "_socket", "grader", "grader.run", "grader.run.template_boot"}, loaded


def test_the_common_grading_paths_leave_torchs_symbolic_shapes_unloaded():
    """torch.autograd.grad with explicit grad_outputs and torch.broadcast_shapes import sympy (a fifth of a
    second in every grading process); the engine's warm-up, gradients and the suite's shape helper do not."""
    probe = (
        "import sys, torch\n"
        "from grader.run import sandbox\n"
        "from grader.wire.executor import vector_jacobian\n"
        "from grading_tests.test_part2_masking import attention_shapes\n"
        "sandbox.warm_up()\n"
        "x = torch.ones(2, 3, requires_grad=True)\n"
        "vector_jacobian([x * 2], [torch.ones(2, 3)], [x])\n"
        "attention_shapes(torch.ones(2, 1, 4, 8), torch.ones(3, 5, 8), torch.ones(3, 5, 6))\n"
        "print('sympy' in sys.modules)\n"
        "torch.autograd.grad([x * 2], [x], [torch.ones(2, 3)])\n"
        "print('sympy' in sys.modules)\n")
    assert _printed_by(probe) == ["False", "True"]   # ours leave it out; the explicit form (defence off) loads it


def test_the_emulated_devices_first_operation_leaves_sympy_unloaded_and_distributed_tensors_importable():
    """Before a tensor subclass's first operation torch looks up DTensor, which imports torch.distributed.tensor and
    sympy (half a second of the second device's warm-up, in the template and in a sandbox); the emulated device
    answers that lookup itself (emulated._answer_the_dtensor_lookup), and the module still imports as ever."""
    probe = (
        "import sys, torch\n"
        "from grader.run import sandbox\n"
        "from grader.wire import emulated\n"
        "sandbox.warm_up()\n"
        "sandbox.warm_up_second_device()\n"
        "x = torch.ones(2, 3, device=emulated.device(), requires_grad=True)\n"
        "(x * 2).sum().backward()\n"
        "print('sympy' in sys.modules, emulated.DTENSOR_MODULE in sys.modules)\n"
        "from torch.distributed.tensor import DTensor\n"
        "print(hasattr(DTensor, 'from_local'))\n")
    assert _printed_by(probe) == ["False", "False", "True"]


def test_every_test_that_runs_student_code_on_the_second_device_asks_for_it():
    """The placement helpers take the device from the test: a test that uses one has the second_device fixture,
    whose name the engine runs last (a helper cannot be called without a device)."""
    unasked = []
    for path in sorted((REPO / "grading_tests").glob("test_*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
                continue
            uses = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & PLACEMENT_HELPERS
            if uses and SECOND_DEVICE_FIXTURE not in [argument.arg for argument in node.args.args]:
                unasked.append(f"{path.name}::{node.name}")
    assert unasked == []


class _Item:
    def __init__(self, nodeid: str, second_device: bool = False):
        self.nodeid = nodeid
        self.fixturenames = ["student", *([SECOND_DEVICE_FIXTURE] if second_device else [])]


def test_the_engine_runs_second_device_tests_last_in_their_own_order():
    items = [_Item("a"), _Item("b", True), _Item("c"), _Item("d", True), _Item("e")]
    _SecondDeviceLast().pytest_collection_modifyitems(items)
    assert [item.nodeid for item in items] == ["a", "c", "e", "b", "d"]


def test_the_points_report_keeps_the_suites_order_whatever_order_the_tests_ran_in():
    class Marked(_Item):
        def get_closest_marker(self, name):
            return type("Mark", (), {"args": (1,)})() if name == "part" else None

    class Report:
        def __init__(self, nodeid):
            self.nodeid, self.when, self.skipped, self.failed = nodeid, "call", False, False

    recorder = GradingPlugin(gateway_factory=None)
    recorder.pytest_collection_modifyitems(None, None, [Marked(f"t::test_{name}") for name in "abcd"])
    for name in "cadb":   # the order they ran in
        recorder.pytest_runtest_logreport(Report(f"t::test_{name}"))
    assert [outcome.name for outcome in recorder.report().tests] == [f"test_{name}" for name in "abcd"]


@pytest.mark.parametrize(("request_", "expected"), [
    (messages.CallRequest("scaled_scores", (torch.ones(2),), {}), False),
    (messages.CallRequest("scaled_scores", (torch.ones(2),), {}, CallOptions(device="emulated")), True),
    (messages.CallRequest("causal_mask", (3, 5), {"device": "emulated"}), True),
    (messages.CallRequest("causal_mask", (3, 5), {"device": "emulated:0"}), True),
    (messages.CallRequest("padding_mask", ([2, 4], 5, "emulated"), {}), True),
    (messages.CallRequest("causal_mask", (3, 5), {}, CallOptions(default_device="emulated")), True),
    (messages.CallRequest("causal_mask", (3, 5), {"device": "cpu"}), False),
    (messages.ModuleRequest(ModuleSpec({"d_model": 8}), CallOptions(device="emulated")), True),
    (messages.ModuleRequest(ModuleSpec({"d_model": 8})), False),
], ids=["cpu", "second-device-inputs", "second-device-argument", "indexed-argument", "second-device-positional",
        "default-device", "cpu-argument", "module-second-device", "module-cpu"])
def test_a_call_uses_the_second_device_when_asked_to_or_told_to(request_, expected):
    assert uses_second_device(request_) is expected


def test_the_gateway_moves_to_a_warm_sandbox_at_the_first_second_device_call_and_stays():
    spawner = FakeSpawner(second_warm_from=2)   # the first has a cold second device, the next ones a warm one
    gateway = SandboxGateway(spawner, Limits(), SessionLog())

    def answered_by(device="cpu", **kwargs):
        with pytest.raises(StudentError) as raised:
            gateway.call("causal_mask", (3, 5), kwargs, CallOptions(device=device))
        return raised.value.message

    try:
        answers = [answered_by(), answered_by(), answered_by(device="emulated"), answered_by(),
                   answered_by(device="emulated"), answered_by()]
    finally:
        gateway.close()
        spawner.reap()
    assert answers == ["sandbox 1", "sandbox 1", "sandbox 2", "sandbox 2", "sandbox 2", "sandbox 2"]
    assert gateway.log.crashes == [] and gateway.log.sandboxes == 2   # a move, not a crash


@pytest.mark.slow
def test_the_results_list_the_tests_in_the_suites_order(graded_zoo):
    """Graded by the engine (second-device tests run last), the reference's results follow the suite."""
    listed = [entry_test(test) for test in graded_zoo.results["reference"]["tests"] if entry_test(test)]
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                "grading_tests"], cwd=REPO, capture_output=True, text=True, timeout=SAFETY_NET_S).stdout
    suite = [line.split("::", 1)[1] for line in collected.splitlines() if "::" in line]
    assert listed == [name for name in suite if name in set(listed)]
    assert any("device" in name for name in listed)   # the second-device tests are among them


def test_a_graded_call_seeds_dropout_as_torch_manual_seed_does_without_formatting_a_stack_trace(monkeypatch):
    """torch.manual_seed queues a formatted stack trace for every device type not started (CUDA on a CPU machine):
    hundreds of microseconds before each call, opening source files the sandbox cannot read. seed_random gives
    the same dropout stream and formats none (the control: torch.manual_seed does, here)."""
    import traceback

    from grader.wire.executor import seed_random
    formatted = []
    monkeypatch.setattr(traceback, "format_stack", lambda *a, **k: formatted.append(1) or [])
    x = torch.ones(64, 64)
    torch.manual_seed(5)
    theirs = torch.nn.functional.dropout(x, 0.5)
    control = len(formatted)
    seed_random(5)
    ours = torch.nn.functional.dropout(x, 0.5)
    assert torch.equal(ours, theirs)
    assert len(formatted) == control and (control > 0 or torch.cuda.is_initialized())


SKIPPING_SUITE = """
import pytest

pytestmark = pytest.mark.part(6)
GPU = False


@pytest.mark.skipif(not GPU, reason="needs a CUDA GPU")
@pytest.mark.parametrize("case", range(3))
def test_certain(case):
    pass


@pytest.mark.skipif(GPU, reason="never")
def test_runs():
    pass


# pytest reads a function's marks from the decorator nearest the def outward, and skips for the first that holds.
@pytest.mark.skipif(True, reason="a later mark: pytest takes the first that holds")
@pytest.mark.skipif("1 + 1 == 2", reason="a string condition, pytest's to evaluate")
def test_string_condition_first():
    pass


@pytest.mark.skipif(True, reason="the second holds")
@pytest.mark.skipif(False, reason="does not hold")
def test_second_mark_holds():
    pass


@pytest.mark.part(2)
def test_fails():
    pytest.skip("skipped at run time")
"""


def test_skips_settled_at_collection_give_the_outcomes_pytest_gives(tmp_path):
    (tmp_path / "test_skipping.py").write_text(SKIPPING_SUITE)
    (tmp_path / "conftest.py").write_text(
        "def pytest_configure(config):\n"
        "    config.addinivalue_line('markers', 'part(n): part')\n")
    outcomes, deselected = {}, []

    class Deselected:
        def pytest_deselected(self, items):
            deselected.extend(item.name for item in items)

    for settled in (False, True):
        plugin = GradingPlugin(gateway_factory=None, skips_at_collection=settled)
        assert pytest.main([str(tmp_path), "-q", "-p", "no:cacheprovider", "-o", "addopts="],
                           plugins=[plugin, Deselected()]) == 0
        outcomes[settled] = {nodeid: (o.status, o.message, o.part, o.weight) for nodeid, o in plugin.outcomes.items()}
        outcomes[settled, "order"] = [o.name for o in plugin.report().tests]
    assert outcomes[True] == outcomes[False] and outcomes[True, "order"] == outcomes[False, "order"]
    assert [status for status, *_ in outcomes[True].values()].count("skipped") == 6, outcomes[True]
    assert deselected == ["test_certain[0]", "test_certain[1]", "test_certain[2]", "test_second_mark_holds"]


def test_the_exit_notice_is_readable_once_the_child_has_exited_and_not_before():
    release_read, release_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.read(release_read, 1)
        os._exit(0)
    notice = processes.exit_notice(pid)
    try:
        assert notice, "this kernel has pidfd_open: the worker must not fall back to polling here"
        assert select.select(notice, [], [], 0.2)[0] == []   # still running
        os.write(release_write, b"x")
        assert select.select(notice, [], [], SAFETY_NET_S)[0] == notice
    finally:
        for fd in notice:
            os.close(fd)
        os.waitpid(pid, 0)


def test_a_closed_template_is_reaped_without_its_closer_waiting():
    """Template.close returns once the template is killed; a thread of its own reaps it, leaving no zombie."""
    template = Template()
    template.close()
    for thread in [t for t in threading.enumerate() if t.name == "reap-template"]:
        thread.join(SAFETY_NET_S)
    assert process_state(template.pid) == "", "the closed template was left a zombie"


def test_reaping_a_template_that_a_wait_elsewhere_took_first_raises_nothing():
    """The reaping thread meets a child already reaped (a wait for any child elsewhere in the process) quietly."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    pool._reap(pid)
