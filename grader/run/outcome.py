"""The outcome of grading one submission: what the trusted process (or the engine, when it failed)
hands to the batch, which turns it into a gradebook row and a results file."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from grader.scoring import STATUSES


@dataclass
class Outcome:
    status: str                               # graded / error / timeout
    message: str = ""                         # one line for the gradebook
    score: float = 0.0
    max_score: float | None = None            # None: never reached the suite (the full points apply)
    part_scores: dict[str, float] = field(default_factory=dict)
    part_max: dict[str, float] = field(default_factory=dict)
    results: dict | None = None               # Gradescope's results.json (None: never reached the suite)
    engine_failure: bool = False              # the engine's fault, not the student's: a later run grades it again
    flags: list[str] = field(default_factory=list)   # for the instructor: escape attempts, tampering, bytecode
    seconds: float = 0.0
    peak_memory_bytes: int = 0                # memory layer: the most one sandbox's processes held together

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")

    @classmethod
    def rejected(cls, message: str, flags=()) -> Outcome:
        """The submission cannot be graded (a bad zip, no package): an error row that stays."""
        return cls("error", message, flags=list(flags))

    @classmethod
    def failed(cls, message: str) -> Outcome:
        """The engine failed on this submission (never the student's doing)."""
        return cls("error", message, engine_failure=True)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str | bytes) -> Outcome:
        """Raises ValueError for anything that is not an outcome."""
        data = json.loads(text)
        if type(data) is not dict:
            raise ValueError("an outcome must be an object")
        try:
            return cls(**data)
        except TypeError as error:
            raise ValueError(str(error)) from None
