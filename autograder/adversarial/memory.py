"""Memory held by a sandbox's processes together: forked children that each fill more than half the limit.

RLIMIT_AS bounds each process alone, so three children of the sandbox, each filling a little over half the
run's limit (--memory-gb), hold one and a half times the limit between them while each stays within its own.
The box's memory cgroup (isolation's "memory" layer) bounds them together: the box is stopped at the limit,
the call fails, and the submission loses that function's tests only (merge_heads: part 3), with a flag.
Switched off (AUTOGRADER_SANDBOX_LAYERS_OFF=memory,seccomp: without the memory cgroup to count their CPU time the
filter refuses the children themselves) the children hold it all, the call answers correctly and
keeps its points, and the submission prints how much its children held together (tests/test_memory_limit.py).

Filling costs CPU time (page faults: 0.4 to 1.7 s per GiB on a small VM), which counts against the call: the
zoo grades it at --memory-gb 2. The entry names no `defence` for test_engine.py's switched-off batch (default
4 GiB, 5 CPU seconds a call), where filling 6 GiB would be stopped by the CPU limit instead, a success of the
wrong defence; tests/test_memory_limit.py shows both sides at 2 GiB with room for the CPU time.
"""
from __future__ import annotations

from autograder.adversarial.abuse import abusive
from autograder.adversarial.base import Context, Entry
from autograder.adversarial.expectations import Expectation

NAME = "abuse-forked-children-fill-memory"
REPORT = "autograder-memory-attack:"   # what the submission prints once its children all held their share
FLAG = "stopped at the memory limit"
CHILDREN = 3
# Once per sandbox (on the grader's first call of merge_heads in it). The children write every page (really
# held, not just reserved), say so on a pipe, and hold it until the parent has heard from all three: only
# then were they over the limit together. A child that could not is the attack failing: the call raises.
FILL = f"""\
if "filled" not in _abuse_done:
    _abuse_done.add("filled")
    import mmap as _mmap
    import resource as _resource
    _caps = [_resource.getrlimit(_which)[0] for _which in (_resource.RLIMIT_AS, _resource.RLIMIT_DATA)]
    _limit = min([_cap for _cap in _caps if _cap != _resource.RLIM_INFINITY] or [4 << 30])
    _block = 16 << 20
    _share = (_limit // 2 // _block + 1) * _block      # more than half the run's limit, in each child
    _held_read, _held_write = _abuse_os.pipe()
    _go_read, _go_write = _abuse_os.pipe()
    _children = []
    for _ in range({CHILDREN}):
        _child = _abuse_os.fork()
        if _child == 0:
            try:
                _abuse_os.close(_held_read)
                _abuse_os.close(_go_write)
                _flags = _mmap.MAP_PRIVATE | _mmap.MAP_ANONYMOUS | getattr(_mmap, "MAP_POPULATE", 0)
                _hog = _mmap.mmap(-1, _share, flags=_flags)
                _ones = b"1" * _block
                for _ in range(_share // _block):
                    _hog.write(_ones)                   # every page written: held, not just reserved
                _abuse_os.write(_held_write, b"1")
                _abuse_os.read(_go_read, 1)             # hold it until the parent has heard from all
            finally:
                _abuse_os._exit(0)
        _children.append(_child)
    _abuse_os.close(_held_write)
    _abuse_os.close(_go_read)
    _held = 0
    while _held < {CHILDREN} and _abuse_os.read(_held_read, 1):
        _held += 1
    print("{REPORT} %d children held %d bytes together (limit %d)" % (_held, _held * _share, _limit), flush=True)
    _abuse_os.close(_go_write)
    _abuse_os.close(_held_read)
    for _child in _children:
        _abuse_os.waitpid(_child, 0)
    if _held < {CHILDREN}:
        raise MemoryError("not every child could hold its share")"""


def held_report(output: str) -> tuple[int, int, int] | None:
    """(children, bytes they held together, the limit) from the submission's output, if it got that far."""
    for line in output.splitlines():
        if line.startswith(REPORT):
            words = line[len(REPORT):].split()
            return int(words[0]), int(words[3]), int(words[-1].rstrip(")"))
    return None


def entries(_context: Context) -> list[Entry]:
    body = FILL.replace("{", "{{").replace("}", "}}")   # abusive() runs it through str.format: no fields of its own
    return [Entry(Expectation(NAME, "abuse", "graded", "forks 3 children that each fill over half the memory limit: "
                              "the box is stopped at the limit for all its processes together",
                              baseline="reference", lost_parts=(3,), flag=FLAG, needs_layer="memory"),
                  abusive("heads.py", "merge_heads", body), needs_root=True)]
