"""What the project's own tests cost, in CPU seconds, by file and by fixture.

    python benchmarks/suite_cost.py [PYTEST ARGS]

Runs `python -m pytest` in this process (any arguments are passed on: `-m "not slow"`, a file) with a
plugin that reads the CPU time of this process and of every child process it waited for (resource.getrusage:
a child's figure includes the children it waited for in turn) around each test's setup, call and teardown,
and around each fixture's own setup (its dependencies are set up before it, so each figure is its own). Wall
times on a shared machine are not comparable between runs; CPU seconds nearly are.

Prints, most costly first: collection, each test file (its tests' setup, call and teardown together, module fixtures
included), each fixture that cost a second or more (session and module fixtures: their one setup), the 15
most costly tests, then the total, the wall time and the load average. Exits with pytest's status.

It runs the tests in one process (-n 0): pytest-xdist's workers are processes this one never waits for.
"""
from __future__ import annotations

import collections
import contextlib
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_accounting import CpuGroup, own_and_children_seconds


class CostPlugin:
    def __init__(self, cpu_seconds):
        self.cpu_seconds = cpu_seconds   # of everything the run started, as far as it can be counted
        self.by_file = collections.Counter()
        self.by_test = collections.Counter()
        self.by_fixture = collections.Counter()
        self.tests_in_file = collections.Counter()
        self.scopes: dict[str, str] = {}

    def _measure(self, item):
        start = self.cpu_seconds()
        yield
        spent = self.cpu_seconds() - start
        self.by_file[item.location[0]] += spent
        self.by_test[item.nodeid] += spent

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        self.tests_in_file[item.location[0]] += 1
        yield from self._measure(item)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        yield from self._measure(item)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item):
        yield from self._measure(item)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_collection(self, session):
        start = self.cpu_seconds()
        yield
        self.by_file["(collection: importing the test modules)"] += self.cpu_seconds() - start

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        start = self.cpu_seconds()
        yield
        key = f"{fixturedef.argname} ({fixturedef.baseid or 'conftest'})"
        self.by_fixture[key] += self.cpu_seconds() - start
        self.scopes[key] = fixturedef.scope

    def report(self, wall: float) -> str:
        total = sum(self.by_file.values())
        lines = [f"{'CPU-s':>8} {'share':>6} {'tests':>6}  file"]
        lines += [f"{cpu:8.1f} {cpu / total:6.1%} {self.tests_in_file[name]:6d}  {name}"
                  for name, cpu in self.by_file.most_common()]
        lines += ["", f"{'CPU-s':>8} {'scope':>8}  fixture (its own setup, dependencies apart)"]
        lines += [f"{cpu:8.1f} {self.scopes[name]:>8}  {name}" for name, cpu in self.by_fixture.most_common()
                  if cpu >= 1.0]
        lines += ["", f"{'CPU-s':>8}  test (setup, call and teardown)"]
        lines += [f"{cpu:8.1f}  {name}" for name, cpu in self.by_test.most_common(15)]
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        lines += ["", f"total {total:.1f} CPU-s in {sum(self.tests_in_file.values())} tests; wall {wall:.1f} s "
                      f"({total / wall if wall else 0:.2f} cores busy on average); load average now {load}"]
        return "\n".join(lines)


def main(argv: list[str]) -> int:
    group = CpuGroup()
    with group or contextlib.nullcontext():
        if group:
            group.join(os.getpid())   # this process and everything it starts, counted by the kernel
        plugin = CostPlugin(group.seconds if group else own_and_children_seconds)
        start = time.monotonic()
        status = pytest.main(["-q", "-n", "0", *argv], plugins=[plugin])   # in this process: xdist workers are unseen
        print("\n" + plugin.report(time.monotonic() - start))
        print("CPU counted by " + ("a cgroup of the run's own: every process it started" if group else
                                   "getrusage: this process and the children it waited for (no cgroup could be "
                                   "made: run as root for every process)"))
    return int(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
