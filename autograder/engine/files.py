"""Writing a file so that a reader never sees half of it: a temporary name, fsync, then os.replace."""
from __future__ import annotations

import os
import pathlib


def atomic_write(path, content: str | bytes) -> None:
    """content: text (written as UTF-8) or bytes."""
    path = pathlib.Path(path)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    binary = isinstance(content, bytes)
    with open(temporary, "wb" if binary else "w", encoding=None if binary else "utf-8") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
