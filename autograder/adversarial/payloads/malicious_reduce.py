"""Cheat: return objects whose __reduce__ runs code when the grader unpickles them.

The sandbox's own filter is switched off first, so the object is really pickled onto the
wire; the grader reads with torch.load(weights_only=True), which refuses it.
"""
from ._common import FUNCTIONS, Evil, disable_sandbox_checks


def install(api):
    print(f"sandbox filters switched off: {disable_sandbox_checks()}")
    shapes = [lambda: Evil(), lambda: (Evil(), Evil()), lambda: {"output": Evil()}, lambda: [Evil()]]
    for index, name in enumerate(FUNCTIONS):
        make = shapes[index % len(shapes)]
        api[name] = lambda *_args, _make=make, **_kwargs: _make()
