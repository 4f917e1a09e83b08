"""The GPU agreement checks of the hidden suite, exercised on the CPU.

There is no GPU in CI. So the tolerance derivation (grading_tests/lowp_tolerance.py) and the very
test functions of grading_tests/test_part6_cuda.py run here on the CPU (their DEVICE patched to
"cpu"), in float16, bfloat16 and float32, against the reference, correct variants and known bugs.
On a GPU only the device differs. Forcing an SDPA backend (CallOptions.sdpa_backend) is shown
to reach the student's call with the CPU's two backends.
"""
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET

import pytest
import torch

from autograder.samples import edited_reference, write_submission
from autograder.zoo.variants import VARIANTS
from grader.gateway.local import LocalGateway
from grading_tests import lowp_tolerance as lowp
from grading_tests import oracle
from grading_tests.tolerance import Tolerance, floor_tolerance
from tests.patience import SAFETY_NET_S

DTYPES = (torch.float16, torch.bfloat16, torch.float32)
SDPA_CALL = "return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=is_causal)"
FOLD_CAUSAL = "mask = mask & causal_mask(q.size(-2), k.size(-2), device=q.device)"

# Correct code written differently from the reference (the zoo's variants, among them a softmax taken
# in float32 for half precision): must pass in every dtype.
CORRECT_VARIANTS = {sample.name: sample.overrides for sample in VARIANTS}

# name -> (overrides, path that is wrong, cases where it shows, words the failure must contain)
BUGS = {
    "manual-unscaled": (edited_reference("scaling.py", "scale = q.size(-1) ** -0.5", "scale = 1.0"),
                        "manual", ("self", "cross-padding"), "output"),
    "fused-unscaled": (edited_reference("multihead.py", SDPA_CALL,
                                        SDPA_CALL.replace("is_causal)", "is_causal, scale=1.0)")),
                       "fused", ("self", "cross"), "output"),
    "fused-drops-causal-with-padding": (edited_reference("multihead.py", FOLD_CAUSAL, "pass"),
                                        "fused", ("self-padding-causal",), "output"),
    "fused-ignores-padding": (edited_reference("multihead.py", SDPA_CALL,
                                               SDPA_CALL.replace("attn_mask=mask", "attn_mask=None")),
                              "fused", ("self-padding", "cross-padding"), "output"),
    "fused-detaches-queries": (edited_reference("multihead.py", SDPA_CALL,
                                                SDPA_CALL.replace("(q, k, v,", "(q.detach(), k, v,")),
                               "fused", ("self",), "gradient of"),
}


@pytest.fixture(scope="module")
def submissions(tmp_path_factory):
    """name -> LocalGateway, made once; sys.path and the imported `student` are restored afterwards."""
    saved_path = list(sys.path)
    saved_modules = {n: m for n, m in sys.modules.items() if n == "student" or n.startswith("student.")}
    root = tmp_path_factory.mktemp("agreement")
    # Correct on backends that take a mask with is_causal (CPU flash), refused by others (math); and the same, wrong.
    both = edited_reference("multihead.py", FOLD_CAUSAL + "\n            is_causal = False", "pass")
    variants = {"reference": {}} | CORRECT_VARIANTS | {name: bug[0] for name, bug in BUGS.items()} | {
        "fused-passes-mask-and-causal": both,
        "fused-passes-mask-and-causal-unscaled": {"multihead.py": both["multihead.py"].replace(
            SDPA_CALL, SDPA_CALL.replace("is_causal)", "is_causal, scale=1.0)"))}}
    gateways = {name: LocalGateway(write_submission(root / name, overrides=overrides)) for name,
                overrides in variants.items()}
    yield gateways
    sys.path[:] = saved_path
    for name in [n for n in sys.modules if n == "student" or n.startswith("student.")]:
        del sys.modules[name]
    sys.modules.update(saved_modules)


@pytest.fixture
def cuda_tests(monkeypatch):
    """grading_tests/test_part6_cuda.py with its device set to the CPU."""
    with warnings.catch_warnings():   # its part/weight markers are registered by grading_tests/conftest.py only
        warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
        from grading_tests import test_part6_cuda
    monkeypatch.setattr(test_part6_cuda, "DEVICE", "cpu")
    return test_part6_cuda


def case_named(name):
    return next(case for case in lowp.CASES if case.name == name)


def dtype_id(dtype):
    return str(dtype).removeprefix("torch.")


# ---------------------------------------------------------------- the tolerance itself

def test_tolerance_is_the_low_precision_error_floored_at_torch_defaults_and_fudged():
    golden = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    exact = golden.to(torch.float16)
    assert lowp.derive_tolerance(golden, exact) == Tolerance(1e-3, 1e-3)
    off = exact + torch.tensor([0.0, 0.0625, 0.0], dtype=torch.float16)   # 1/32 relative error at -2
    tolerance = lowp.derive_tolerance(golden, off, fudge=2.0)
    assert tolerance.atol == pytest.approx(2 * 0.0625) and tolerance.rtol == pytest.approx(2 * 0.0625 / 2)


def test_near_zero_entries_leave_rtol_bounded():
    # PyTorch's get_rtol would give |1e-3 / 1e-12| = 1e9 here: a tolerance that accepts anything.
    golden = torch.tensor([1.0, 1e-12], dtype=torch.float64)
    low = torch.tensor([1.0, 1e-3], dtype=torch.float16)
    tolerance = lowp.derive_tolerance(golden, low)
    assert tolerance.rtol == floor_tolerance(torch.float16).rtol
    assert tolerance.atol == pytest.approx(1e-3, rel=1e-2)


def test_tolerance_follows_the_precision_of_the_dtype():
    case = case_named("self-padding-causal")
    atol = {dtype: lowp.cached_expectation(case, dtype, "cpu")[1].tolerances["output"].atol for dtype in DTYPES}
    assert atol[torch.float32] < atol[torch.float16] < atol[torch.bfloat16]
    assert atol[torch.bfloat16] < 0.1, "bfloat16 tolerance is so loose it would accept wrong attention"


@pytest.mark.parametrize("case", lowp.CASES, ids=lambda case: case.name)
def test_low_precision_reference_is_the_oracle_in_float64(case):
    inputs = lowp.make_inputs(case, torch.float32)

    def f64(t):
        return t if not isinstance(t, torch.Tensor) or not t.is_floating_point() else t.double()

    state = {k: v.double() for k, v in inputs.state.items()}
    forward = {k: f64(v) for k, v in inputs.forward.items()}
    expected = oracle.mha(state, case.num_heads, **forward)
    torch.testing.assert_close(lowp.low_precision_mha(state, case.num_heads, **forward), expected, atol=1e-12,
                               rtol=1e-12)


def test_rejects_and_accepts_on_the_math_path_alone():
    """The method itself, without any student code: torch's own SDPA (math) in fp16 passes, a missing scale fails."""
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 4, 29, 16, generator=gen, dtype=torch.float64).to(torch.float16) for _ in range(3))
    golden = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    scores = (q @ k.transpose(-2, -1)) * 0.25
    low = torch.softmax(scores.masked_fill(~oracle.causal(29, 29), float("-inf")), -1) @ v
    tolerance = lowp.derive_tolerance(golden, low, lowp.OUTPUT_FUDGE)
    with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH]):
        fused = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        unscaled = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0)
    assert not tolerance.violations(fused, golden).any()
    assert tolerance.violations(unscaled, golden).float().mean() > 0.5


# ---------------------------------------------------------------- the CUDA tests, run on the CPU

@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_the_reference_passes_every_case_on_both_paths(submissions, cuda_tests, dtype):
    for case in lowp.CASES:
        cuda_tests.test_cuda_manual_path_matches_float64(submissions["reference"], case, dtype)
        cuda_tests.test_cuda_fused_path_matches_float64(submissions["reference"], case, dtype)
    assert submissions["reference"].forbidden == {}   # its SDPA calls are the graded ones (sdpa_calls.py)


@pytest.mark.parametrize("variant", sorted(CORRECT_VARIANTS))
def test_correct_variants_pass_in_half_precision(submissions, cuda_tests, variant):
    for dtype in (torch.float16, torch.bfloat16):
        for case in lowp.CASES:
            cuda_tests.test_cuda_manual_path_matches_float64(submissions[variant], case, dtype)
            cuda_tests.test_cuda_fused_path_matches_float64(submissions[variant], case, dtype)
    assert submissions[variant].forbidden == {}


@pytest.mark.parametrize("bug", sorted(BUGS))
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_bugs_fail_in_every_dtype(submissions, cuda_tests, bug, dtype):
    _, path, cases, words = BUGS[bug]
    test = {"manual": cuda_tests.test_cuda_manual_path_matches_float64,
            "fused": cuda_tests.test_cuda_fused_path_matches_float64}[path]
    other = {"fused": cuda_tests.test_cuda_manual_path_matches_float64,
             "manual": cuda_tests.test_cuda_fused_path_matches_float64}[path]
    for name in cases:
        with pytest.raises(AssertionError, match=words) as failure:
            test(submissions[bug], case_named(name), dtype)
        assert "tensor(" not in str(failure.value), "a failure message printed a whole tensor"
        other(submissions[bug], case_named(name), dtype)   # the untouched path still passes


def test_failure_names_the_case_and_the_likely_mistake(submissions, cuda_tests):
    with pytest.raises(AssertionError) as failure:
        cuda_tests.test_cuda_fused_path_matches_float64(submissions["fused-ignores-padding"],
                                                        case_named("self-padding"), torch.float16)
    message = str(failure.value)
    assert "fused=True" in message and "float16" in message and "padding mask" in message
    assert "Hint: matches attention without the padding mask" in message


def test_a_backend_that_gives_an_empty_row_the_mean_of_the_values_grades_the_student_not_the_backend(
        submissions, cuda_tests, monkeypatch):
    """cuDNN on an H200 (torch 2.11) gives a query whose bool mask row is all False the mean of the values, where the
    other backends give zeros: the reference failed the fused empty-row case there. Played here on the CPU: the
    fused path's queries that see no key are not graded by the CUDA tests (the CPU test of an empty sequence holds
    them to the handout's zero), the manual path keeps that zero, and a wrong answer elsewhere still fails."""
    original = torch.nn.functional.scaled_dot_product_attention

    def like_cudnn(query, key, value, attn_mask=None, *args, **kwargs):
        out = original(query, key, value, attn_mask, *args, **kwargs)
        if attn_mask is None or attn_mask.dtype != torch.bool:
            return out
        return torch.where(~attn_mask.any(-1, keepdim=True), value.mean(-2, keepdim=True), out)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", like_cudnn)
    case = case_named("cross-padding-empty-row")
    cuda_tests.test_cuda_fused_path_matches_float64(submissions["reference"], case, torch.float16)
    cuda_tests.test_cuda_manual_path_matches_float64(submissions["reference"], case, torch.float16)
    with pytest.raises(AssertionError, match="output of the queries that see a key"):
        cuda_tests.test_cuda_fused_path_matches_float64(submissions["fused-ignores-padding"], case, torch.float16)


# ---------------------------------------------------------------- forcing an SDPA backend

def test_forcing_a_backend_reaches_the_students_call(submissions, cuda_tests):
    """On the CPU, "flash" is the CPU fused kernel, which takes a mask together with is_causal;
    "math" refuses that pair. A fused path that passes both passes with flash and fails with math:
    the backend really is forced inside the student's call, and each backend is graded."""
    case = case_named("self-padding-causal")
    for backend in ("flash", "math"):
        cuda_tests.test_cuda_fused_path_matches_float64_on_each_backend(submissions["reference"], case, torch.float16,
                                                                        backend)
    both = submissions["fused-passes-mask-and-causal"]
    cuda_tests.test_cuda_fused_path_matches_float64_on_each_backend(both, case, torch.float16, "flash")
    with pytest.raises(AssertionError, match="Explicit attn_mask should not be set when is_causal=True"):
        cuda_tests.test_cuda_fused_path_matches_float64_on_each_backend(both, case, torch.float16, "math")
    for backend in ("efficient", "cudnn"):
        with pytest.raises(pytest.skip.Exception, match=f"the {backend} backend cannot run these inputs"):
            cuda_tests.test_cuda_fused_path_matches_float64_on_each_backend(submissions["reference"], case,
                                                                            torch.float16, backend)


def test_a_backend_that_refuses_a_correct_form_of_the_call_skips_a_right_path_and_fails_a_wrong_one(
        submissions, cuda_tests, monkeypatch):
    """On a GPU, flash takes no mask: a correct fused path that always passes a bool mask stops there for its form
    alone, and is skipped, not failed, once its answer with torch's own choice of backend agrees. Played here with
    math, which refuses a mask together with is_causal, standing in for such a backend."""
    monkeypatch.setattr(cuda_tests, "form_problems", lambda *args: {"bool mask always": "stand-in: refused"})
    case, test = case_named("self-padding-causal"), cuda_tests.test_cuda_fused_path_matches_float64_on_each_backend
    with pytest.raises(pytest.skip.Exception, match="its answer with torch's own choice of backend agrees"):
        test(submissions["fused-passes-mask-and-causal"], case, torch.float16, "math")
    with pytest.raises(AssertionError, match="output") as failure:   # stopped too, but its answer is wrong
        test(submissions["fused-passes-mask-and-causal-unscaled"], case, torch.float16, "math")
    assert "raised" not in str(failure.value)
    with pytest.raises(AssertionError, match="output"):   # a wrong answer under the backend is never skipped
        test(submissions["fused-unscaled"], case, torch.float16, "math")


@pytest.mark.parametrize("case", lowp.CASES, ids=lambda case: case.name)
def test_every_form_of_a_correct_sdpa_call_gives_the_references_answer(case):
    """The forms the forced-backend probe tries (lowp.SDPA_FORMS) are all correct calls: each gives what the
    reference's gives, and CPU flash, which takes them all, refuses none."""
    B, H, L, S, D = case.batch, case.num_heads, case.queries, case.key_count, case.embed_dim // case.num_heads
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, H, n, D, generator=gen, dtype=torch.float64) for n in (L, S, S))
    answers = {}
    for form in lowp.SDPA_FORMS:
        mask, is_causal = lowp.sdpa_form(form, case, torch.float64, "cpu")
        answers[form] = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
    for form, answer in answers.items():
        torch.testing.assert_close(answer, answers["reference"], msg=form)
    assert lowp.form_problems("flash", case, torch.float32, "cpu") == {}


# ---------------------------------------------------------------- the hidden suite on this machine

def test_without_a_gpu_every_cuda_test_skips_and_the_reference_still_scores_100(tmp_path):
    folder = write_submission(tmp_path / "reference")
    report, results = tmp_path / "junit.xml", tmp_path / "results.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", "grading_tests", "-p", "no:cacheprovider", "-q",
                           "--submission", str(folder), f"--junitxml={report}", f"--results-json={results}"],
                          capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    cuda = [c for c in ET.parse(report).getroot().iter("testcase") if c.get("classname",
                                                                            "").endswith("test_part6_cuda")]
    count = len(lowp.CASES) * len(DTYPES) * (2 + len(lowp.BACKENDS))   # manual, fused, fused on each backend
    assert len(cuda) == count
    reasons = {c.find("skipped").get("message", "") if c.find("skipped") is not None else "RAN" for c in cuda}
    assert reasons == {"needs a CUDA GPU; torch.cuda.is_available() is False here"}
    import json
    scored = json.loads(results.read_text())
    assert scored["score"] == 100.0
    assert not [t for t in scored["tests"] if "test_part6_cuda" in t["name"]]   # not run: in the one entry
    assert f"{count} tests (Part 6): needs a CUDA GPU" in scored["tests"][-1]["output"]


def test_the_grading_code_leaves_torchs_accelerator_alone_until_the_emulated_device_is_wanted():
    """On a GPU, a PrivateUse1 backend registered beside CUDA becomes torch's accelerator in CUDA's place and
    every CUDA backward fails an internal assert (seen on an H100): importing the suite's code and the engine's
    must not register the emulated device; only a process that grades on it (a sandbox, LocalGateway without a
    GPU) does."""
    probe = ("import torch, grading_tests.placement, grading_tests.lowp_tolerance, grader.gateway.local, "
             "grader.gateway.client, grader.run.trusted; "
             "print(torch.accelerator.current_accelerator()); "
             "from grader.wire import emulated; emulated.device(); "
             "print(torch.accelerator.current_accelerator())")
    lines = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                           timeout=SAFETY_NET_S).stdout.split()
    assert lines == ["None", "emulated"]


def test_without_a_gpu_the_local_gateway_grades_placement_on_the_emulated_device(tmp_path):
    write_submission(tmp_path / "sub", solution=True)
    gateway = LocalGateway(str(tmp_path / "sub"))
    assert gateway.second_device == "emulated"
    assert torch.accelerator.current_accelerator() == torch.device("emulated")
