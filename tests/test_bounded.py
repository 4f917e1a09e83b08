"""A class-level step runs like a submission: in a child process within limits of its own, so that what one
hostile submission makes it cost (the similarity report reads every submission's text) neither holds the batch
nor takes its memory; whatever stops it, the batch carries on and says why."""
from __future__ import annotations

import time

import pytest

from autograder.reports import bounded
from autograder.reports.bounded import StepLimits, Stopped

ROOMY = StepLimits(memory_bytes=4 << 30, cpu_seconds=30, load_free_seconds=60.0)


def test_the_steps_value_comes_back():
    assert bounded.run(lambda: {"flagged": 3, "names": ["a", "b"]}, ROOMY) == {"flagged": 3, "names": ["a", "b"]}


def test_memory_past_the_limit_stops_the_step_not_the_batch():
    held = []

    def hoard():
        while True:
            held.append(bytearray(64 << 20))

    with pytest.raises(Stopped, match="ran out of memory"):
        bounded.run(hoard, StepLimits(memory_bytes=1 << 30, cpu_seconds=30, load_free_seconds=60.0))
    assert not held, "the step ran in this process"


def test_cpu_past_the_limit_stops_the_step():
    def spin():
        while True:
            pass

    started = time.monotonic()
    with pytest.raises(Stopped, match="more than 1 s of CPU time"):
        bounded.run(spin, StepLimits(memory_bytes=4 << 30, cpu_seconds=1, load_free_seconds=600.0))
    assert time.monotonic() - started < 300   # a safety net, not a measure: the kernel stopped it, not the net


def test_a_step_that_waits_is_stopped_at_its_net():
    with pytest.raises(Stopped, match="took longer than 1 s"):
        bounded.run(lambda: time.sleep(3600), StepLimits(memory_bytes=4 << 30, cpu_seconds=30, load_free_seconds=1.0))


def test_the_steps_own_error_is_said_in_a_line():
    def broken():
        raise ValueError("no such thing")

    with pytest.raises(Stopped, match="ValueError: no such thing"):
        bounded.run(broken, ROOMY)
