"""Writing a file so that a reader never sees half of it: a temporary name, fsync, then os.replace."""
from __future__ import annotations

import os
import pathlib


def atomic_write(path, content: str | bytes) -> None:
    """content: text (written as UTF-8; anything UTF-8 cannot encode, a lone surrogate, as "?") or bytes."""
    path = pathlib.Path(path)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    if isinstance(content, str):   # never a file left unwritten because of one character
        content = content.encode("utf-8", "replace")
    with open(temporary, "wb") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
