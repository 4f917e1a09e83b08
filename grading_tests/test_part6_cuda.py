"""Part 6 on a GPU: both paths of MultiHeadAttention in float16, bfloat16 and float32, against float64.

For every case (self- and cross-attention, padding and causal masks) and dtype, the student's
module runs on CUDA with the grader's weights, and its output and all gradients (inputs and
parameters) must lie within tolerances derived from the error of plain low-precision math, as
PyTorch's own SDPA tests derive them (see lowp_tolerance.py); on the fused path, the output of a query
that sees no key is left to the CPU's tests, since SDPA's backends differ there (lowp_tolerance.CASES).
The fused path runs once with PyTorch's own choice of backend and once with each SDPA backend
forced (flash, memory-efficient, cuDNN, math) where that backend can run the inputs on this GPU.

Without a GPU, or where the student's code cannot reach it (the engine's sandbox), every test here is
skipped: skipped tests are worth 0 and the part's points are
shared among the tests that ran, so the total stays 100 on a CPU-only grader.

Run on a GPU machine:  python -m pytest grading_tests -k cuda --submission DIR -v
"""
import pytest
import torch

from grading_tests.checks import student_raised
from grading_tests.lowp_tolerance import (
    BACKENDS,
    CASES,
    backend_problem,
    cached_expectation,
    check_agreement,
    describe_case,
    form_problems,
    run_student,
)

DTYPES = (torch.float16, torch.bfloat16, torch.float32)
PATHS = ("manual", "fused-default", *(f"fused-{name}" for name in BACKENDS))
# All of these together weigh as much as six CPU tests of Part 6: the GPU confirms what the CPU
# tests check, on more backends, rather than dominating the part.
WEIGHT = 6.0 / (len(DTYPES) * len(CASES) * len(PATHS))

pytestmark = [
    pytest.mark.part(6),
    pytest.mark.weight(WEIGHT),
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="needs a CUDA GPU; torch.cuda.is_available() is False here"),
]

DEVICE = "cuda"


@pytest.fixture(autouse=True)
def _student_code_reaches_the_gpu(second_device):
    """Where the student's code runs without a GPU (an engine's sandbox without --gpu: it opens no GPU device
    file), these tests cannot decide: skipped (worth 0, the part's points shared among the tests that ran), never
    failed. (Asking for the second device also has the engine run them last, with the other tests that use it.)"""
    if second_device != DEVICE:
        pytest.skip("the student's code runs where no GPU can be reached (the grading engine's sandbox); "
                    "run `python -m pytest grading_tests -k cuda --submission DIR` to grade the GPU path")


def dtype_id(dtype):
    return str(dtype).removeprefix("torch.")


def agree(student, case, dtype, *, fused, backend=None):
    inputs, expected = cached_expectation(case, dtype, DEVICE)
    what = describe_case(case, dtype, fused, backend, DEVICE)
    result = run_student(student, case, inputs, fused=fused, device=DEVICE, backend=backend)
    if any(torch.device(d).type != torch.device(DEVICE).type for d in result.devices):
        raise AssertionError(f"{what}: the output came back on {result.devices[0]}, not on {DEVICE}: "
                             f"create tensors on the inputs' device, not on a fixed one")
    check_agreement(result, case, inputs, expected, what, fused=fused)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_cuda_manual_path_matches_float64(student, case, dtype):
    agree(student, case, dtype, fused=False)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_cuda_fused_path_matches_float64(student, case, dtype):
    agree(student, case, dtype, fused=True)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_cuda_fused_path_matches_float64_on_each_backend(student, case, dtype, backend):
    problem = backend_problem(backend, case, dtype, DEVICE)
    if problem is not None:
        pytest.skip(f"the {backend} backend cannot run these inputs on this GPU: {problem}")
    try:
        agree(student, case, dtype, fused=True, backend=backend)
    except AssertionError as failure:
        picky = form_problems(backend, case, dtype, DEVICE) if student_raised(failure) else {}
        if not picky:
            raise   # the backend runs every form a correct call may take: the failure is the submission's
        # It refuses some correct forms (flash: a mask): what this path computes decides, with torch's own choice of
        # backend; a wrong answer fails there, here as well.
        agree(student, case, dtype, fused=True)
        pytest.skip(f"the {backend} backend cannot run every form of a correct SDPA call on this GPU "
                    f"({'; '.join(f'{form}: {why}' for form, why in picky.items())}); this submission's call "
                    f"stopped under it, and its answer with torch's own choice of backend agrees")
