"""The trusted grading process of one submission: runs the hidden suite with the sandbox gateway.

Forked per submission from the template, so every submission starts from the same clean state
(same scores whatever ran before or in parallel). It is the only process that runs
grading_tests; student code never runs here. It has limits of its own (limits.py), so even a
forged answer that got past every check could not make it allocate or compute without bound.
"""
from __future__ import annotations

import os
import pathlib
import sys

import pytest

from assignment.spec import SPEC
from grader.contain.limits import Limits, apply_trusted_limits
from grader.paths import GRADING_DIR, REPO
from grader.run.files import atomic_write
from grader.run.outcome import Outcome
from grader.run.run_settings import gpu_environment

OUTPUT_SHOWN = 2000   # characters of the submission's own printing shown in its feedback
TRUSTED_SECONDS = 300.0   # CPU seconds of the suite's own work, beyond the student's budget
# pytest's own plugins that the hidden suite has no use for: caching, log capture, the garbage collection after
# the session for unraisable exceptions (a tenth of a second), and what no hidden test asks for (doctests, JUnit XML,
# temporary folders, monkeypatch, recorded warnings, subtests, unittest classes, the debugger). Each one loaded costs
# its import, and its hooks run around every test: a sixth of the trusted process's collection.
UNUSED_PLUGINS = ("cacheprovider", "logging", "unraisableexception", "threadexception", "doctest", "junitxml",
                  "pastebin", "legacypath", "tmpdir", "monkeypatch", "recwarn", "warnings", "setuponly", "setupplan",
                  "stepwise", "subtests", "unittest", "debugging")
# pytest as the engine runs it: no plugins from the environment or unused (above), no assertion rewriting (the
# checks raise their own messages), no per-test output capture (the output goes to pytest.log).
PYTEST_ARGS = ["-q", "--no-header", *(arg for name in UNUSED_PLUGINS for arg in ("-p", f"no:{name}")),
               "--assert=plain", "--capture=no", "-o", "addopts=", "--tb=line", f"--rootdir={REPO}"]


# The hidden suite's fixture for the second device (grading_tests/conftest.py): a test that runs student code there
# asks for it.
SECOND_DEVICE_FIXTURE = "second_device"


class _SecondDeviceLast:
    """pytest plugin: the tests that run student code on a second device (those that ask for its fixture) go last,
    so the sandbox that warms up the second device meanwhile (worker.py) is ready when they start. (The results
    keep the suite's order.)"""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        items.sort(key=lambda item: SECOND_DEVICE_FIXTURE in getattr(item, "fixturenames", ()))


def run(control, work_dir: str, limits: Limits, package: str, hidden_files: bool = True,
        gpu: int | None = None, public_checks: bool = False) -> None:
    """Body of the forked trusted process: grade the student/ package at `package` (read here only as text: the
    sandboxes run it), write work_dir/result.json, never return. hidden_files: whether the sandboxes are kept from
    the grader's files (isolation.Plan.hides_the_graders_files). gpu: the GPU this job was given (a GPU run: the
    CUDA tests run, their low-precision expectations computed here on it; the float64 oracle stays on the CPU).
    public_checks: run the handout's public checks too (public_checks.py), before the hidden suite."""
    code = 0
    try:
        log_fd = os.open(os.path.join(work_dir, "pytest.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.chdir(work_dir)   # anything pytest writes stays in this private folder
        apply_trusted_limits(limits, limits.budget + TRUSTED_SECONDS)
        atomic_write(os.path.join(work_dir, "result.json"),   # read by the worker at once, then deleted
                     grade(control, limits, package, hidden_files, gpu, public_checks).to_json(), durable=False)
    except BaseException as error:  # noqa: BLE001 - reported to the worker as a grader error
        code = 1
        print(f"grader error: {type(error).__name__}: {error}", flush=True)
    finally:
        sys.stdout.flush()
        os._exit(code)


def grade(control, limits: Limits, package: str, hidden_files: bool = True, gpu: int | None = None,
          public_checks: bool = False) -> Outcome:
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    os.environ.update(gpu_environment(gpu))   # before anything asks CUDA: it reads this when it starts
    from grader import source_rules
    from grader.gateway.client import SandboxGateway, SessionLog, Spawner
    from grader.run import public_checks as public
    from grader.scoring import error_results, gradescope_results
    from grader.suite import GradingPlugin

    # First, in a sandbox of their own: no sandbox that has seen a hidden call comes before the one whose words
    # students read at once.
    checks_log = SessionLog()
    checks = public.run(Spawner(control), limits, checks_log, words_shown=hidden_files) if public_checks else []
    log = SessionLog()
    def gateway(_config) -> SandboxGateway:
        made = SandboxGateway(Spawner(control), limits, log, words_shown=hidden_files,
                              second_device="cuda" if gpu is not None else None)
        made.note_source(package)   # the rule's evidence the sandbox cannot erase: its source, read as text
        return made

    plugin = GradingPlugin(gateway, skips_at_collection=True)
    exit_code = int(pytest.main([str(GRADING_DIR), *PYTEST_ARGS], plugins=[plugin, _SecondDeviceLast()]))
    for made in plugin.gateways:
        if isinstance(made, SandboxGateway):
            made.close()
    with open("sandbox-output.txt", "wb") as handle:   # in the trusted process's own folder, for --keep
        handle.write(bytes(log.output))
    report = plugin.report() if plugin.outcomes else None
    flags = flags_of(log, plugin.flags()) + source_rules.loaded_flags(pathlib.Path(package))
    flags += [f"in the public checks: {flag}" for flag in flags_of(checks_log, [])]
    status, message, details = judge(log, limits, exit_code, report)
    if report is None or log.broken is not None:
        return Outcome("error", message, engine_failure=True, flags=flags)
    if log.import_failure is not None or imports_nothing(log.unloadable):
        # Nothing could be called: every answer was the import's error, which earns nothing (a ValueError at
        # import must not pass the tests that expect one). Said once, at the top.
        results = error_results(status, details, extra_output=feedback_notes(log, flags))
        results["tests"] += checks
        return Outcome(status, message, max_score=report.max_score, results=results, flags=flags,
                       part_scores={str(p): 0.0 for p in report.part_scores},
                       part_max={str(p): s for p, s in report.part_max.items()})
    lead = "" if status == "graded" and not details else f"{status}: {details}"
    results = gradescope_results(report, extra_output=feedback_notes(log, flags), lead=lead)
    results["tests"] += checks
    return Outcome(status, message, score=report.score, max_score=report.max_score,
                   part_scores={str(p): s for p, s in report.part_scores.items()},
                   part_max={str(p): s for p, s in report.part_max.items()}, results=results,
                   engine_failure=exit_code not in (0, 1), flags=flags)   # pytest itself failed: the engine's fault


# What hidden calls met, said at once: the kind only. Which calls, and how many, are chosen by code that saw the
# hidden inputs (a crash in every call whose inputs hold a 5 names a subset of the graded names), so they wait for
# the hidden tests' results (the feedback's lead, shown with the summary).
WITH_THE_RESULTS = " (which, and how often: with the hidden tests' results)"
CALLS_AT_ONCE = {"timeouts": "calls of your code timed out" + WITH_THE_RESULTS,
                 "refusals": "answers of your code were refused as malformed or forged" + WITH_THE_RESULTS,
                 "crashes": "the sandbox died in calls of your code and was restarted" + WITH_THE_RESULTS}
LATE_FAILURE = "importing student failed in a sandbox started after hidden tests had run" + WITH_THE_RESULTS
LATE_UNLOADABLE = ("a sandbox started after hidden tests had run could not import some graded names"
                   + WITH_THE_RESULTS)


def judge(log, limits: Limits, exit_code: int, report) -> tuple[str, str, str]:
    """(status, message, details). message: the gradebook's one line, which students read at once, so it holds only
    what the submission's code could not choose after it saw hidden inputs (its first sandbox's import; which kind
    of trouble hidden calls met). details: the same line with which calls and how many, for the feedback."""
    if log.broken is not None:
        return _same("error", f"grader error: {log.broken}")
    if exit_code not in (0, 1) or report is None:
        return _same("error", f"grader error: the grading suite exited with code {exit_code} (see the engine's log)")
    if log.import_failure is not None:
        failure = log.import_failure
        status = "timeout" if failure.type_name == "Timeout" else "error"
        details = _one_line(f"{failure.type_name}: {failure.message}")
        return status, LATE_FAILURE if _late(failure.message) else details, details
    unloadable, unloadable_details = _unloadable_notes(log.unloadable)
    if imports_nothing(log.unloadable):
        return "error", unloadable, unloadable_details
    status, calls, calls_details = _judge_calls(log, limits)
    return (status, "; ".join(filter(None, [calls, unloadable])),
            "; ".join(filter(None, [calls_details, unloadable_details])))


def _same(status: str, message: str) -> tuple[str, str, str]:
    return status, message, message


def _judge_calls(log, limits: Limits) -> tuple[str, str, str]:
    if log.budget_exhausted:
        return _same("timeout", f"time budget of {limits.budget:g} s used up (CPU time, or wall-clock time not spent "
                                f"waiting for a CPU); the points earned before are kept, later calls were not run")
    if log.timeouts:
        names = ", ".join(sorted(set(log.timeouts)))
        return "timeout", CALLS_AT_ONCE["timeouts"], f"{len(log.timeouts)} call(s) timed out: {names}"
    if log.refusals:
        names = ", ".join(sorted(set(log.refusals)))
        return ("graded", CALLS_AT_ONCE["refusals"],
                f"{len(log.refusals)} answer(s) refused as malformed or forged: {names}")
    if log.crashes:
        names = ", ".join(sorted(set(log.crashes)))
        return ("graded", CALLS_AT_ONCE["crashes"],
                f"the sandbox died in {len(log.crashes)} call(s) and was restarted: {names}")
    return _same("graded", "")


def _unloadable_notes(unloadable: dict[str, str]) -> tuple[str, str]:
    """(at once, in full): the graded names that could not be imported. Those a sandbox started after hidden calls
    failed to import (_late) are chosen by code that saw hidden inputs: not named at once."""
    nothing = imports_nothing(unloadable)
    full = unloadable_note(unloadable, nothing=nothing)
    early = {name: why for name, why in unloadable.items() if not _late(why)}
    if len(early) == len(unloadable):
        return full, full
    return "; ".join(filter(None, [unloadable_note(early), LATE_UNLOADABLE])), full


def _late(report: str) -> bool:
    """Whether an import's report is a sandbox's that started after hidden calls (the gateway's own words say so)."""
    from grader.gateway.client import LATE_IMPORT  # here: the gateway imports torch, the trusted process's alone
    return LATE_IMPORT in report


def imports_nothing(unloadable: dict[str, str]) -> bool:
    """Every graded name failed to import (one that imports in part is graded in part)."""
    return set(unloadable) >= {*SPEC.functions, SPEC.module_class}


def unloadable_note(unloadable: dict[str, str], nothing: bool = False) -> str:
    """The graded names that could not be imported and why, in one line ("" when all imported); when nothing
    imported, the reason first (a syntax error's file and line is what the student needs to see)."""
    by_reason: dict[str, list[str]] = {}
    for name in (name for name in (*SPEC.functions, SPEC.module_class) if name in unloadable):
        by_reason.setdefault(unloadable[name], []).append(name)
    notes = [f"{why}: nothing could be imported ({', '.join(names)})" if nothing
             else f"could not import {', '.join(names)}: {why} (the rest was graded)"
             for why, names in by_reason.items()]
    return _one_line("; ".join(notes), limit=500) if notes else ""


def flags_of(log, gateway_flags: list[str]) -> list[str]:
    """What an instructor should look at: forbidden calls (the gateways), forged answers (refused here), and
    what the sandboxes' tripwires saw (their own report: a hint, it can be silenced)."""
    flags = list(gateway_flags)
    if log.refusals:
        flags.append(f"tampering with the sandbox: {len(log.refusals)} answer(s) refused as forged or malformed "
                     f"({', '.join(sorted(set(log.refusals)))})")
    flags += [f"sandbox saw {note}" for note in log.notes]
    return flags


def feedback_notes(log, flags: list[str]) -> str:
    """What the student reads after the tests: what their code printed, and what was flagged. Not the machine's
    isolation (the grader reads that in the gradebook row, which the results file carries in extra_data)."""
    from grader.sanitize import printable

    notes = []
    if log.output_total:
        shown = printable(bytes(log.output[:OUTPUT_SHOWN]).decode("utf-8", "replace"), newlines=True)
        notes.append(f"Your code printed {log.output_total} bytes; the first {len(shown)} characters:\n{shown}")
    if flags:
        notes.append("Flagged for your instructor to look at:\n" + "\n".join(f"- {flag}" for flag in flags))
    return "\n\n".join(notes)


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + " [...]"
