"""A student named by a Gradescope export: typed once, for the export's reader and the gradebook's row alike.

A module of its own, and not row.py's: the export's reader runs in the engine's template, which every sandbox is
forked from, and the gradebook's code has no business in a sandbox's memory (the adversarial zoo's memory snooper
looks there for rows).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Submitter:
    """A student of a Gradescope export's submission (empty fields where the export had none)."""
    name: str = ""
    sid: str = ""
    email: str = ""
