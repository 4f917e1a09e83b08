"""The suite's adequacy, measured by machine (autograder/adequacy): mutants of the reference, submissions that
compute nothing and correct styles, all generated from the reference; and the gates, seen to be what keeps an
adversary from the property tests' points."""
import difflib
import json
import subprocess
import sys

import pytest

from assignment.spec import SPEC
from autograder.adequacy import adversaries, styles
from autograder.adequacy.mutants import mutants
from autograder.adequacy.report import sample
from autograder.stubs import solution_blocks
from grader.gateway.local import LocalGateway
from grader.paths import REFERENCE_DIR, REPO
from grading_tests import gates
from tests.patience import SAFETY_NET_S
from tests.suite_runner import call_hidden


@pytest.fixture(scope="module")
def every_mutant():
    return mutants()


def test_each_mutant_changes_one_graded_solution_block_and_compiles(every_mutant):
    assert len(every_mutant) > 200
    assert len({m.key for m in every_mutant}) == len({m.slug for m in every_mutant}) == len(every_mutant)
    for module in SPEC.modules:
        reference = (REFERENCE_DIR / f"{module}.py").read_text()
        blocks = {b.function: b for b in solution_blocks(reference) if b.part is not None}
        for mutant in (m for m in every_mutant if m.module == f"{module}.py"):
            compile(mutant.text, mutant.module, "exec")
            block = blocks[mutant.function]
            assert mutant.part == SPEC.part_of(mutant.function)
            changed = [i + 1 for i, line in enumerate(difflib.ndiff(reference.splitlines(), mutant.text.splitlines()))
                       if line.startswith("- ")]
            assert changed and all(block.first < line < block.last for line in changed), mutant.key


def test_a_sample_spreads_over_every_part(every_mutant):
    chosen = sample(every_mutant, 12)
    assert len(chosen) == 12 and {m.part for m in chosen} == set(SPEC.numbers)
    assert sample(every_mutant, None) == every_mutant


def test_styles_decorate_the_graded_functions_only(tmp_path):
    compiled = styles.write_one(tmp_path / "compiled", "torch-compile") / "student" / "masking.py"
    graded = [name for part in SPEC.parts if part.module == "masking" for name in part.names]
    assert compiled.read_text().count("@torch.compile\n") == len(graded)
    no_grad = (styles.write_one(tmp_path / "no-grad", "no-grad-mask-builders") / "student").glob("*.py")
    decorated = {line for path in no_grad for line in _decorated_defs(path.read_text(), "@torch.no_grad()")}
    assert decorated == {"causal_mask", "padding_mask", "expand_padding_mask"}   # their docstrings: "bool tensor"


def _decorated_defs(text, decorator):
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.strip() == decorator:
            following = next(rest for rest in lines[index + 1:] if rest.lstrip().startswith("def "))
            yield following.split("def ", 1)[1].split("(")[0]


# Property tests of one function each, run as the suite runs them, with their gate and without it.
PROPERTY_TESTS = [("test_part1_scaling", "test_inputs_are_not_modified"),
                  ("test_part1_scaling", "test_works_on_the_inputs_device"),
                  ("test_part2_masking", "test_causal_mask_on_the_requested_device"),
                  ("test_part3_heads", "test_runs_on_the_inputs_device"),
                  ("test_part4_padding", "test_runs_on_the_masks_device")]


@pytest.fixture(scope="module")
def random_answers(tmp_path_factory):
    """The adversary answering random values of the right shapes, dtypes and devices, through a LocalGateway."""
    saved_path, saved = list(sys.path), {n: m for n, m in sys.modules.items() if n.split(".")[0] == "student"}
    folder = adversaries.write_one(tmp_path_factory.mktemp("adversary") / "random", "random")
    yield LocalGateway(folder)
    sys.path[:] = saved_path
    for name in [n for n in sys.modules if n.split(".")[0] == "student"]:
        del sys.modules[name]
    sys.modules.update(saved)


def _passes(test, student, gated: bool) -> bool:
    try:
        if gated:
            for mark in (m for m in test.pytestmark if m.name == "gated"):
                gates.require(student, *mark.args)
        call_hidden(test, student)
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize("module, name", PROPERTY_TESTS, ids=[name for _module, name in PROPERTY_TESTS])
def test_the_gate_is_what_keeps_random_answers_from_a_property_tests_points(random_answers, module, name):
    test = getattr(__import__(f"grading_tests.{module}", fromlist=["_"]), name)
    assert any(m.name == "gated" for m in test.pytestmark)
    assert _passes(test, random_answers, gated=False), "without its gate the property holds for random answers"
    assert not _passes(test, random_answers, gated=True)


@pytest.mark.slow
def test_a_sample_of_the_adequacy_run_finds_nothing_wrong(tmp_path):
    """The quick adequacy check: a sample of mutants, every adversary and every style, graded by the engine."""
    out = tmp_path / "adequacy"
    proc = subprocess.run([sys.executable, "-m", "autograder", "adequacy", "--sample", "12", "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    report = json.loads((out / "adequacy.json").read_text())
    scores = {g["name"]: g["score"] for g in report["generated"]}
    floor = [score for name, score in scores.items() if name.startswith("adversary-") and name != adversaries.CONTROL]
    assert len(floor) == len(adversaries.STRATEGIES) and max(floor) <= adversaries.FLOOR
    assert {score for name, score in scores.items() if name.startswith("style-")} == {100.0}
    assert scores[adversaries.CONTROL] == 100.0 and len(report["mutants"]) == 12 and report["problems"] == []
    assert "highest score without computing" in proc.stdout
