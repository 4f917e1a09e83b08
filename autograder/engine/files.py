"""Writing a file so that a reader never sees half of it: a temporary name, fsync, then os.replace."""
from __future__ import annotations

import os
import pathlib


def atomic_write(path, text: str) -> None:
    path = pathlib.Path(path)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
