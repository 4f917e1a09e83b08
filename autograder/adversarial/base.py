"""Building blocks of the zoo: an entry (expectation + writer) and the context a writer needs."""
from __future__ import annotations

import pathlib
from collections.abc import Callable
from dataclasses import dataclass

from assignment.spec import SPEC
from autograder.adversarial.expectations import Expectation
from grader.paths import REPO, STUDENT_DIR

PAYLOADS = pathlib.Path(__file__).resolve().parent / "payloads"


@dataclass(frozen=True)
class Context:
    root: pathlib.Path       # the zoo folder (one child per submission)
    markers: pathlib.Path    # a root-only folder outside it: a file appearing there means a payload ran

    def fill(self, text: str) -> str:
        for placeholder, value in (("@REPO@", REPO), ("@ZOO@", self.root), ("@MARKERS@", self.markers),
                                   ("@FUNCTIONS@", ",".join(SPEC.functions))):
            text = text.replace(placeholder, str(value))
        return text


@dataclass(frozen=True)
class Entry:
    expectation: Expectation
    write: Callable[[pathlib.Path, Context], None]   # writes the submission at the given path
    suffix: str = ""            # ".zip" for archives
    needs_root: bool = False    # harmful unless the engine can drop privileges (kills, signals)


def stub_init() -> str:
    return (STUDENT_DIR / "__init__.py").read_text()


def payload(name: str, context: Context, **fields: str) -> str:
    """The attack's source with its placeholders filled in ("@OWN@" and the like from fields)."""
    text = context.fill((PAYLOADS / f"{name}.py").read_text())
    for key, value in fields.items():
        text = text.replace(f"@{key.upper()}@", value)
    return text
