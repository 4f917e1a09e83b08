"""The channels between the grader's processes hold against a submission (issue 20).

The adversarial zoo (autograder/adversarial/channels.py, graded by tests/test_engine.py) attacks each
channel through the engine; here each defence that no isolation layer provides is shown to matter:
the attack is run against the old behaviour and succeeds there.
"""
from __future__ import annotations

import contextlib
import csv
import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
import tempfile

import pytest

from autograder.adversarial import channels
from autograder.samples import write_submission
from grader import sanitize
from grader.contain.limits import Limits
from grader.gateway.client import SessionLog
from grader.paths import REPO
from grader.run import gradebook, submissions
from grader.run.files import atomic_write
from grader.run.outcome import Outcome
from grader.wire import messages, protocol
from tests.fake_sandbox import FakeSpawner, failing_call
from tests.grading_command import grade
from tests.patience import SAFETY_NET_S

LONE = os.fsdecode(b"not-utf8-\xff")   # how Python decodes a file name of bytes that are not UTF-8

# ---------------------------------------------------------------- 1 text that no UTF-8 writer accepts

def test_text_that_is_not_utf_8_reaches_every_output_file_as_valid_text(tmp_path):
    with pytest.raises(UnicodeEncodeError):   # the attack: a plain UTF-8 writer stops on it
        (tmp_path / "plain.csv").write_text(LONE, encoding="utf-8")
    outcome = Outcome("graded", f"could not import {LONE}", score=100.0,
                      flags=[f"sandbox saw escape attempt: open {LONE}"])
    submission = submissions.Submission(LONE, "s", "/x")
    row = gradebook.row_from_outcome(submission, outcome, "isolated")
    (tmp_path / "results").mkdir()
    gradebook.write_result(tmp_path, row, gradebook.results_document(outcome, row))
    gradebook.write_csv(tmp_path, [row])
    for path in (tmp_path / "grades.csv", tmp_path / "results" / "s.json"):
        text = path.read_bytes().decode("utf-8")          # valid UTF-8, or this raises
        assert "\ufffd" in (json.dumps(json.loads(text), ensure_ascii=False) if path.suffix == ".json" else text)
    (line,) = csv.DictReader((tmp_path / "grades.csv").open(encoding="utf-8"))
    assert line["message"] == "could not import not-utf8-\ufffd"


def test_any_text_is_written_even_where_no_one_sanitized_it(tmp_path):
    atomic_write(tmp_path / "f.txt", f"a {LONE} b")
    assert (tmp_path / "f.txt").read_text(encoding="utf-8") == "a not-utf8-? b"
    assert sanitize.valid_text({"k": [LONE, (LONE,)]}) == {"k": ["not-utf8-\ufffd", ("not-utf8-\ufffd",)]}


# ---------------------------------------------------------------- 2 the grader's environment and argv

def test_a_forked_copy_of_the_grader_shows_its_environment_in_proc(tmp_path):
    """The attack against the old template (a fork of the batch): /proc/self/environ keeps the secret even once
    os.environ is cleared. The zoo's escape-read-the-graders-environment finds nothing in today's sandboxes."""
    probe = ("import os; os.environ.clear(); pid = os.fork()\n"
             "if pid == 0:\n    print(open('/proc/self/environ', 'rb').read()); os._exit(0)\n"
             "os.waitpid(pid, 0)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         timeout=SAFETY_NET_S,
                         env={**os.environ, channels.SECRET_VARIABLE: channels.SECRET}).stdout
    assert channels.SECRET in out


def test_the_template_is_a_fresh_program_with_none_of_the_graders_environment():
    from grader.run import template_boot
    assert set(template_boot.template_environment()) <= {"PATH", "LANG", *template_boot.NO_GPU,
                                                         *template_boot.KEPT_VARIABLES}
    assert "--out" not in template_boot.BOOT and "--workers" not in template_boot.BOOT


# ---------------------------------------------------------------- 3 the engine's own failure, forged

def forged_broken() -> bytes:
    return messages.Broken("forged by the submission").encode()


def test_a_broken_message_written_at_import_is_refused_as_tampering_not_a_grader_error():
    greeting = messages.Locked().encode() + forged_broken() + messages.Ready().encode()
    log = SessionLog()
    error = failing_call(FakeSpawner(greeting=greeting), Limits(), log)
    assert log.broken is None and log.refusals == ["import student"]
    assert error.type_name == "ProtocolError" and "refused" in error.message
    # The attack against the old reading (Ready, Failure or Broken first): the forged frame is believed.
    frame = forged_broken()[protocol.LENGTH.size:]
    assert isinstance(messages.decode(protocol.decode(frame), messages.Ready, messages.Failure, messages.Broken),
                      messages.Broken)


def test_the_engine_can_still_report_its_own_failure_before_any_student_code_runs():
    log = SessionLog()
    failing_call(FakeSpawner(greeting=messages.Broken("no landlock").encode()), Limits(), log)
    assert log.broken == "no landlock" and log.refusals == []


def test_a_lock_down_that_never_ends_is_the_graders_error_and_costs_the_student_nothing():
    """No student code runs before the box says it is locked (a GPU box starts CUDA first): a lock-down past one
    call's limits is the engine's failure, as a Broken reply is, never a timeout charged to the student."""
    log = SessionLog()
    failing_call(FakeSpawner(greeting=b""), Limits(call_timeout=0.5), log)   # it never says Locked
    assert log.broken is not None and "lock down did not finish" in log.broken
    assert (log.student_seconds, log.student_wall_seconds, log.timeouts, log.import_failure) == (0.0, 0.0, [], None)


# ---------------------------------------------------------------- 6 answers the decoder did not foresee

def test_a_dtype_given_as_a_list_is_refused_not_a_crash():
    header = json.dumps({"value": {"tensor": 0}, "tensors": [[["float32"], [1], "cpu"]]}).encode()
    body = protocol.HEADER_LENGTH.pack(len(header)) + header + b"\0" * 4
    with pytest.raises(TypeError):   # the attack against the old decoder
        protocol._decode(body)
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(body)


def test_mutated_frames_only_ever_raise_protocol_errors():
    """Thousands of frames derived from real answers by flipping, cutting and splicing bytes and by replacing JSON
    values with others of any type: decoding either succeeds or raises ProtocolError, never anything else."""
    import torch
    rng = random.Random(20)
    seeds = [messages.CallReply(torch.ones(2, 3), ["cpu"], None, [None], [], []).encode(),
             messages.Ready({"masking": "x"}, ["e"]).encode(), forged_broken()]
    oddities = [[], {}, ["float32"], 1e308, -1, None, True, "x" * 5, {"tensor": 0}, [[1, 2]], {"dtype": []}]
    for _ in range(3000):
        frame = bytearray(rng.choice(seeds)[protocol.LENGTH.size:])
        if rng.random() < 0.5:
            size = protocol.HEADER_LENGTH.unpack_from(frame)[0]
            header = json.loads(frame[4:4 + size])
            _replace_somewhere(header, oddities, rng)
            text = json.dumps(header).encode()
            frame = protocol.HEADER_LENGTH.pack(len(text)) + text + frame[4 + size:]
        else:
            for _ in range(rng.randint(1, 4)):
                frame[rng.randrange(len(frame))] = rng.randrange(256)
        with contextlib.suppress(protocol.ProtocolError):
            messages.decode(protocol.decode(bytes(frame)), messages.CallReply, messages.Ready, messages.Broken)


def _replace_somewhere(tree, oddities, rng) -> None:
    nodes = [tree]
    while nodes:
        node = nodes.pop()
        keys = list(node) if isinstance(node, dict) else list(range(len(node))) if isinstance(node, list) else []
        for key in keys:
            if rng.random() < 0.15:
                node[key] = rng.choice(oddities)
            elif isinstance(node[key], (dict, list)):
                nodes.append(node[key])


# ---------------------------------------------------------------- 8 the grader's TMPDIR, 9 its private files

@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the sandboxes get their own user id only as root")
@pytest.mark.parametrize("mode", [0o755, 0o1777], ids=["closed-to-others", "world-writable"])
def test_a_graders_own_tmpdir_neither_breaks_grading_nor_keeps_a_sandboxs_files(tmp_path, mode):
    temporary = tmp_path / "grader-tmp"
    temporary.mkdir()
    temporary.chmod(mode)
    write_submission(tmp_path / "class" / "reference")
    proc = grade(tmp_path / "class", "--out", tmp_path / "out", "--workers", "1", env={"TMPDIR": str(temporary)})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (row,) = csv.DictReader((tmp_path / "out" / "grades.csv").open())
    assert (row["status"], float(row["score"])) == ("graded", 100.0), row["message"]
    left = [path for path in temporary.rglob("*") if path.lstat().st_uid >= 1_000_000]
    assert left == [], left


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the sandboxes get their own user id only as root")
def test_without_landlock_a_private_file_of_the_grader_is_closed_to_the_sandboxes(tmp_path):
    gradescope = pathlib.Path(tempfile.mkdtemp(prefix="autograder-like-"))   # /autograder: open to everyone
    gradescope.chmod(0o755)
    secret = gradescope / "submission_metadata.json"
    secret.write_text(json.dumps({"previous_submissions": channels.SECRET}))
    secret.chmod(0o644)   # as Gradescope leaves it
    reader = ("\nimport pathlib\ntry:\n    _text = pathlib.Path(" + repr(str(secret)) + ").read_text()\n"
              "except OSError:\n    _text = ''\nif _text:\n    raise RuntimeError('read: ' + _text)\n")
    init = (REPO / "student" / "__init__.py").read_text() + reader
    write_submission(tmp_path / "class" / "reader", overrides={"__init__.py": init})

    def status(out, *extra):
        proc = grade(tmp_path / "class", "--out", tmp_path / out, "--workers", "1", *extra, layers_off="landlock,mnt")
        (row,) = csv.DictReader((tmp_path / out / "grades.csv").open())
        return row, proc
    row, _proc = status("open")   # the attack, without --private: the file is read
    assert row["status"] == "error" and channels.SECRET in row["message"]
    secret.chmod(0o644)
    row, proc = status("closed", f"--private={secret}")
    assert (row["status"], float(row["score"])) == ("graded", 100.0), row["message"]
    assert str(secret) not in proc.stdout.split("isolation:")[-1].split("permissions:")[0]   # not still readable
    assert pathlib.Path(secret).stat().st_mode & 0o777 == 0o644   # put back once no sandbox of the run is left
    shutil.rmtree(gradescope)


# ---------------------------------------------------------------- 7 flags the student did not earn

def test_a_file_opened_by_the_library_is_not_the_students_escape_attempt(tmp_path):
    """torch 2.11 reads /proc/sys/kernel/random/boot_id while it compiles (seen in a sandbox on an H100): a flag
    must mean the student's code asked, directly or through Python's own library (pathlib), not a library."""
    student, library = tmp_path / "student", tmp_path / "site-packages"
    student.mkdir()
    library.mkdir()
    (student / "attack.py").write_text("import pathlib\ndef run():\n    pathlib.Path('/etc/hostname').exists()\n"
                                       "    open('/etc/hostname').close()\n")
    (library / "torchish.py").write_text("def run():\n    open('/etc/hostname').close()\n")
    probe = (f"import sys, torch; sys.dont_write_bytecode = True; sys.path[:0] = [{str(student)!r}, {str(library)!r}]\n"
             "from grader.contain.tripwires import Tripwires\n"
             f"wires = Tripwires({str(student)!r}, [], {{}}); wires.install()\n"
             "import torchish; torchish.run(); print('library:', wires.drain())\n"
             "import attack; attack.run(); print('student:', wires.drain())\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         timeout=SAFETY_NET_S,
                         cwd=REPO).stdout.splitlines()
    assert out == ["library: []", "student: ['escape attempt: open /etc/hostname']"]


def _tripwire_probe(tmp_path, body: str) -> list[str]:
    """What a sandbox's tripwires (over this test module's own functions, as the engine's) print after body ran."""
    student = tmp_path / "student"
    student.mkdir(exist_ok=True)
    probe = ("import sys, types, torch\n"
             "from grader.contain.tripwires import Tripwires\n"
             "engine = types.ModuleType('grader.fake_engine')\n"
             "exec('def answer(x):\\n    return x\\ndef other(x):\\n    return -x\\n', vars(engine))\n"
             f"wires = Tripwires({str(student)!r}, [], {{'engine': engine}}); wires.install()\n" + body)
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                          timeout=SAFETY_NET_S, cwd=REPO).stdout.splitlines()


def test_a_function_replaced_or_its_code_swapped_is_noted_whoever_swapped_it(tmp_path):
    """A replaced function shows in the drain's fingerprint; a code swapped in place keeps the function's identity
    and is the audit hook's to see, also when the swap comes from code the student exec'd (not the student's
    frame)."""
    out = _tripwire_probe(tmp_path, "print(wires.drain())\n"
                                    "exec('engine.answer.__code__ = engine.other.__code__')\n"
                                    "print(wires.drain())\n"
                                    "engine.other = lambda x: x\n"
                                    "print(wires.drain())\n")
    assert out == ["[]", "['tampering: set answer.__code__']", "['tampering: engine.other was replaced']"]


def test_a_drain_raises_no_audit_event_of_its_own(tmp_path):
    """The drain after every call reads identities only: reading a function's __code__ raises an audit event, and
    every event calls the hook (a fifth of the sandbox's time per call went there)."""
    out = _tripwire_probe(tmp_path, "events = []\n"
                                    "sys.addaudithook(lambda event, args: events.append(event))\n"
                                    "wires.drain(); events.clear(); wires.drain()\n"
                                    "print(events)\n")
    assert out == ["[]"]
