"""Cheat: look through the sandbox's memory (inherited from the grader by fork) for the rest of the class.

Other submissions' paths and gradebook rows would tell it names and scores, and a path to
copy from. The engine forks sandboxes from a template made before the batch read anything
about the class, so there is nothing to find; the stubs score 0.
"""
import gc
import warnings

ZOO = "@ZOO@"
OWN = "@OWN@"


def _strings(obj):
    if isinstance(obj, dict):
        yield from (v for pair in obj.items() for v in pair if isinstance(v, str))
    elif isinstance(obj, (list, tuple, set, frozenset)):
        yield from (v for v in obj if isinstance(v, str))
    elif hasattr(obj, "__dict__") and isinstance(getattr(obj, "__dict__", None), dict):
        yield from (v for v in vars(obj).values() if isinstance(v, str))


def install(_api):
    warnings.simplefilter("ignore")   # touching every object wakes deprecation warnings
    found, rows = set(), []
    for obj in gc.get_objects():
        if isinstance(obj, dict) and "score" in obj and "slug" in obj:
            rows.append(f"{obj.get('submission')}: {obj.get('score')}")
        for text in _strings(obj):
            if text.startswith(ZOO + "/") and not text.startswith(OWN):
                found.add(text)
    for text in sorted(found)[:20]:
        print(f"found: {text}")
    for row in rows[:20]:
        print(f"row: {row}")
    print(f"searched {len(gc.get_objects())} objects")
