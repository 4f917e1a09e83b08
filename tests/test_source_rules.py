"""The forbidden-call rule decided from evidence the sandbox cannot erase: the submission's source, read as text.

Code that switches torch's function and dispatch modes off (the watches that see a call of torch's attention)
makes every test that runs it break the rule; the honest idioms around those modes (a student's own test that
pushes a TorchFunctionMode, a cache that asks whether a dispatch mode is active) cost nothing."""
from __future__ import annotations

import json
import sys

import pytest

from autograder.samples import write_submission
from autograder.zoo.bugs import BUGS
from grader import source_rules
from grader.gateway.local import LocalGateway
from grader.paths import REPO

UNWATCHED = next(bug for bug in BUGS if bug.name == "manual-sdpa-behind-switched-off-watches")
HONEST_MODES = '''"""Uses of torch's modes that hide nothing (written as a careful student did, from the handout alone).
DisableTorchFunction named in a docstring is no use of it."""
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode


class NoTorchSDPA(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is F.scaled_dot_product_attention:
            raise AssertionError("the manual path called F.scaled_dot_product_attention")
        return func(*args, **(kwargs or {}))


def cache_is_safe():
    from torch.utils._python_dispatch import _get_current_dispatch_mode
    return _get_current_dispatch_mode() is None
'''


def test_switching_the_modes_off_is_evidence_and_the_honest_idioms_are_not(tmp_path):
    hiding_package = write_submission(tmp_path / "hiding", overrides=UNWATCHED.overrides) / "student"
    hiding, _private = source_rules.read(hiding_package)
    assert any("DisableTorchFunction" in line for line in hiding)
    assert any("_disable_current_modes" in line for line in hiding)

    honest = write_submission(tmp_path / "honest") / "student"
    (honest / "own_checks.py").write_text(HONEST_MODES)
    hiding, private = source_rules.read(honest)
    assert hiding == []
    assert private == ["own_checks.py:16: imports torch.utils._python_dispatch._get_current_dispatch_mode"]


@pytest.mark.parametrize("code", [
    "import torch\nwith torch._C.DisableTorchFunction():\n    pass\n",
    "from torch._C import DisableTorchFunction as D\n",
    "import torch\nguard = getattr(torch._C, 'DisableTorchFunction')\n",
    "import torch.utils._python_dispatch as d\nd._pop_mode()\n",
], ids=["attribute", "import-as", "getattr-string", "pop-a-mode"])
def test_each_way_of_naming_the_switch_is_found(tmp_path, code):
    (tmp_path / "attack.py").write_text(code)
    hiding, _ = source_rules.read(tmp_path)
    assert hiding and hiding[0].startswith("attack.py:")


@pytest.fixture
def fresh_import():
    saved_path = list(sys.path)
    saved = {n: m for n, m in sys.modules.items() if n.split(".")[0] == "student"}
    yield
    sys.path[:] = saved_path
    for name in [n for n in sys.modules if n.split(".")[0] == "student"]:
        del sys.modules[name]
    sys.modules.update(saved)


def test_hidden_calls_break_the_rule_in_the_parts_that_run_the_code(tmp_path, monkeypatch, fresh_import):
    """With the defence off (no source read), the watches see nothing and the forbidden path passes unflagged."""
    write_submission(tmp_path / "hiding", overrides=UNWATCHED.overrides)
    spec = _manual_module_call()

    monkeypatch.setattr(source_rules, "read", lambda _package: ([], []))
    blind = LocalGateway(str(tmp_path / "hiding"))
    blind.test = "test_a"
    blind.run_module(spec)
    assert blind.forbidden == {} and blind.flags == [], "the attack no longer hides: this test proves nothing"

    monkeypatch.undo()
    for name in [n for n in sys.modules if n.split(".")[0] == "student"]:
        del sys.modules[name]
    seeing = LocalGateway(str(tmp_path / "hiding"))
    assert "switches off the modes" in seeing.hiding and seeing.hiding_parts == {5, 6}
    assert any(flag.startswith("forbidden call: the submission's code switches off") for flag in seeing.flags)


def test_the_parts_charged_are_those_that_run_the_file():
    assert source_rules.parts_running(["masking.py:3: uses DisableTorchFunction"]) == {2, 5, 6}
    assert source_rules.parts_running(["multihead.py:3: uses DisableTorchFunction"]) == {5, 6}
    assert source_rules.parts_running(["helpers.py:3: uses DisableTorchFunction"]) == {1, 2, 3, 4, 5, 6}


def _manual_module_call():
    import torch

    from grader.gateway import ModuleSpec
    from grading_tests import oracle
    return ModuleSpec(init_kwargs={"embed_dim": 4, "num_heads": 2}, state_dict=oracle.random_state(4, True, 1),
                      forward_kwargs={"x": torch.randn(2, 3, 4)})


def test_the_handout_and_the_reference_hold_no_evidence():
    for package in (REPO / "student", REPO / "assignment" / "reference"):
        assert source_rules.read(package) == ([], [])


def test_the_handouts_evidence_read_once_by_digest_gives_what_reading_again_gives(tmp_path, monkeypatch):
    """The batch reads the handout's own files once (Settings.known_sources); a trusted process takes a file's
    evidence from there only where its bytes are the same: a student's edit of a handout file is read again."""
    package = write_submission(tmp_path / "edited") / "student"
    (package / "own_checks.py").write_text(HONEST_MODES)
    with open(package / "check.py", "a") as handle:
        handle.write("\nimport torch\n_off = torch._C.DisableTorchFunction\n")
    read_in_full = source_rules.read(package)
    assert any(line.startswith("check.py:") for line in read_in_full[0]), "the edit is no evidence: proves nothing"

    monkeypatch.setattr(source_rules, "_known", {})
    source_rules.remember(json.loads(json.dumps(source_rules.evidence_by_digest(REPO / "student"))))   # as carried
    parsed = []
    monkeypatch.setattr(source_rules, "file_evidence", lambda text, strict=False, real=source_rules.file_evidence: (
        parsed.append(text) or real(text, strict)))
    assert source_rules.read(package) == read_in_full
    handout = {path.read_bytes() for path in (REPO / "student").rglob("*.py")}
    assert parsed and not handout & set(parsed), "a handout file was read again, or an edited one was not"


# ---------------------------------------------------------------- code that is not the source as it stands

@pytest.mark.parametrize("code", [
    "import zipimport\nhelper = zipimport.zipimporter('student/_kernels.zip').load_module('helper')\n",
    "import marshal\nexec(marshal.loads(open('blob', 'rb').read()))\n",
    "import importlib.util\nspec = importlib.util.spec_from_file_location('m', '/tmp/m.py')\n",
    "import sys\nsys.path.insert(0, '/tmp')\n",
    "import base64\nexec(base64.b64decode('cHJpbnQoMSk='))\n",
    "run = eval\n",
    "exec('import zip' 'import')\n",
    "import ctypes\nctypes.CDLL(None)\n",
    "import pickle\npickle.loads(b'')\n",
    "loader = __import__('marshal')\n",
    "def swap(f, g):\n    f.__code__ = g.__code__\n",
], ids=["zipimport", "marshal", "spec-from-file", "sys-path", "exec-built", "eval-aliased", "exec-a-literal", "ctypes",
        "pickle",
        "import-by-string", "code-swap"])
def test_each_way_of_running_code_that_is_not_the_source_is_flagged(tmp_path, code):
    (tmp_path / "loader.py").write_text(code)
    (flag,) = source_rules.loaded_flags(tmp_path)
    assert "loader.py:" in flag and "a look, not a cost" in flag
    assert source_rules.read(tmp_path)[0] == [], "a loader costs nothing: it is not the switch itself"


def test_correct_code_in_every_style_loads_nothing_but_its_source(tmp_path):
    """The handout (its package imports each module with importlib.import_module), the reference, the zoo's
    variants, the generated class's hands and the adequacy styles: no loader flag; nor the idioms that only look
    like one (a module's .eval(), torch.compile, re.compile, a mode named "eval")."""
    from autograder.adequacy import styles
    from autograder.zoo.variants import VARIANTS
    from tests.cohort import HANDS

    idioms = tmp_path / "idioms"
    idioms.mkdir()
    (idioms / "own.py").write_text("import re\nimport torch\n\nPATTERN = re.compile('x')\nfast = torch.compile\n"
                                   "def f(model, mode='eval'):\n    return model.eval() if mode == 'eval' else model\n")
    packages = [REPO / "student", REPO / "assignment" / "reference", idioms]
    packages += [write_submission(tmp_path / v.name, overrides=v.overrides) / "student" for v in VARIANTS]
    packages += sorted(p for p in HANDS.iterdir() if p.is_dir())
    packages += [styles.write_one(tmp_path / f"style-{s}", s) / "student" for s in styles.STYLES]
    assert {str(p): source_rules.loaded_flags(p) for p in packages if source_rules.loaded_flags(p)} == {}


def test_a_source_the_reader_cannot_read_is_named_and_one_it_can_is_not():
    """Such a file never reaches a box (the unpacking leaves it out): the box's own code could make Python compile it
    (a recursion limit raised, a codec registered) where this reader reads nothing, the switch included."""
    deep = b"import torch\n_off = torch._C.DisableTorchFunction\n_pad = lambda: x" + b".a" * 20000 + b"\n"
    assert source_rules.file_evidence(deep) == [], "the reader reads it: this attack proves nothing"
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(100_000)   # what the box's own __init__.py may do before importing it
        compile(deep, "deep.py", "exec")
    finally:
        sys.setrecursionlimit(limit)
    assert "nested deeper" in source_rules.unreadable(deep)
    assert "encoding" in source_rules.unreadable(b"# -*- coding: box-made-codec -*-\nx = 1\n")
    assert "larger than" in source_rules.unreadable(b"#" * (source_rules.MAX_FILE_BYTES + 1))
    assert "null bytes" in source_rules.unreadable(b"PK\x03\x04\x14\x00")   # a zip named .py: zipimport reads it
    for readable in (b"x = 1\n", b"def broken(:\n", b"# -*- coding: latin-1 -*-\nx = '\xe9'\n"):
        assert source_rules.unreadable(readable) == ""


def test_a_helper_zipped_as_bytecode_runs_unread_unless_the_unpacking_leaves_it_out(tmp_path, fresh_import):
    """The zoo's cheat-watch-switch-zipped-as-bytecode, graded in-process with its zip in place (the unpacking's
    defence off): zipimport runs the switch, the watches see nothing and no rule flags it. Unpacked, the zip is gone
    and the loader is flagged."""
    from autograder.adversarial import unread
    from grader.run import unpacking

    unread.write_zipped_helper(tmp_path / "zipped")
    blind = LocalGateway(str(tmp_path / "zipped"))
    blind.test = "test_a"
    blind.run_module(_manual_module_call())
    assert blind.forbidden == {} and blind.flags == [] and blind.hiding == "", "the attack no longer hides"

    (tmp_path / "private").mkdir()
    unpacked = unpacking.unpack(str(tmp_path / "zipped"), str(tmp_path / "private"))
    package = tmp_path / "private" / "student"
    assert not (package / "_kernels.zip").exists() and "left out student/_kernels.zip" in unpacked.note
    (flag,) = source_rules.loaded_flags(package)
    assert "multihead.py:" in flag and "zipimport" in flag


def test_the_unpacking_parses_neither_the_handouts_files_nor_anything_for_a_fingerprint(tmp_path, monkeypatch):
    """The worker is given the handout's evidence before it unpacks (its trusted process inherits what it read), and
    the batch's fingerprint of every submission reads no source at all (a file's readability follows from its
    bytes, which the digest holds)."""
    from grader.run import unpacking

    folder = write_submission(tmp_path / "upload")
    monkeypatch.setattr(source_rules, "_known", {})
    source_rules.remember(source_rules.evidence_by_digest(REPO / "student"))
    parsed = []
    real = source_rules.ast.parse   # (the module's own: pytest parses with it too)
    monkeypatch.setattr(source_rules.ast, "parse", lambda text, *args, **kwargs: (
        parsed.append(text) or real(text, *args, **kwargs)))
    unpacking.fingerprint(str(folder), str(tmp_path))
    assert parsed == []
    (tmp_path / "private").mkdir()
    unpacking.unpack(str(folder), str(tmp_path / "private"))
    handout = {path.read_bytes() for path in (REPO / "student").rglob("*.py")}
    assert parsed and not handout & set(parsed), "a handout file was parsed, or a student's was not"
