"""Second opinions: a test that compares two answers of the student's code gets the second from a process that
never saw the first's inputs, so a process that remembered the first answer cannot give it back.

A test says which two calls it compares with the decorator second_opinion(case, *args): case(*args) returns the
Questions: two functions of the `student` gateway, and the `opinions` fixture gives the test what both returned
(an Opinions). The suite asks every such test's first call, then moves to a new process (student.start_afresh())
and asks every second call there: one new sandbox for all of them, not one per test. Each call runs under its
own test's name, so a forbidden call it makes is charged to that test, and what it raises is raised in that
test, as if the test had made the call itself.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from grader.gateway import Gateway

MARKER = "second_opinion"


@dataclass
class Questions:
    first: Callable[[Gateway], Any]
    second: Callable[[Gateway], Any]   # asked in a process that never saw first's inputs
    context: Any = None                # what the test needs besides the answers to judge them


@dataclass
class Opinions:
    first: Any
    second: Any
    context: Any


_ANSWERS = pytest.StashKey[dict]()


def second_opinion(case: Callable[..., Questions], *args) -> pytest.MarkDecorator:
    """The test's marker: its Questions is case(*args). (with_args: a marker called with one function alone would
    decorate that function instead.)"""
    return getattr(pytest.mark, MARKER).with_args(case, *args)


def answers(request, student: Gateway) -> Opinions:
    """The two answers of the test that asks (request.node), asking every marked test's calls the first time any
    of them asks."""
    session = request.session
    if _ANSWERS not in session.stash:
        session.stash[_ANSWERS] = ask(student, {item.nodeid: item.get_closest_marker(MARKER) for item in session.items
                                                if item.get_closest_marker(MARKER)})
    answered = session.stash[_ANSWERS].pop(request.node.nodeid)
    if isinstance(answered, BaseException):
        raise answered
    return answered


def ask(student: Gateway, marks: dict) -> dict[str, Opinions | BaseException]:
    """test id -> its Opinions, or what its first or second call raised, for each test's second_opinion mark:
    every first call, then one new process, then every second call."""
    pairs: dict[str, Questions] = {nodeid: mark.args[0](*mark.args[1:]) for nodeid, mark in marks.items()}
    firsts = {nodeid: _as_test(student, nodeid, pair.first) for nodeid, pair in pairs.items()}
    student.start_afresh()
    results: dict[str, Opinions | BaseException] = {}
    for nodeid, pair in pairs.items():
        first = firsts[nodeid]
        second = first if isinstance(first, BaseException) else _as_test(student, nodeid, pair.second)
        results[nodeid] = second if isinstance(second, BaseException) else Opinions(first, second, pair.context)
    return results


def _as_test(student: Gateway, nodeid: str, call):
    """call(student) as the test nodeid would make it: its answer, or the exception it raised (kept for the test)."""
    running, student.test = student.test, nodeid
    try:
        return call(student)
    except (Exception, pytest.fail.Exception, pytest.skip.Exception) as error:   # noqa: BLE001 - raised in its test
        return error.with_traceback(None)
    finally:
        student.test = running
