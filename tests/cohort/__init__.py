"""Test data: a generated class to try the batch command's analytics on: bugs, variants, independent hands, copies.

    members = build(folder, size=200, seed=0)   # folder/student-001 ... one submission each; the answer key back

Who is in it:
- every bug of the zoo (each the reference with one mistake: it loses points in its part) and every correct
  variant (the reference written another way: full marks);
- the independent hands (hands/<name>/): complete correct solutions written separately from the reference and
  from each other, from the handout alone;
- copies: each hand copied once, then copies of zoo samples until the class has `size` members, each disguised
  (disguise.py: locals renamed, functions reordered, comments gone).

`origin` names the independent source a member derives from ("reference" for the zoo, "hand-<name>" for a
hand and its copy): a similarity flag between different origins is a false alarm, a copy that is not flagged
with its original is a miss. Folder names say nothing about the member (student-001 ...), in shuffled order.
"""
from __future__ import annotations

import pathlib
import random
from dataclasses import dataclass

from autograder.samples import write_submission
from autograder.stubs import GRADED_MODULES
from autograder.zoo import fresh
from autograder.zoo.bugs import BUGS
from autograder.zoo.variants import VARIANTS
from tests.cohort.disguise import disguise

HANDS = pathlib.Path(__file__).parent / "hands"


@dataclass(frozen=True)
class Member:
    student: str           # its folder in the class
    kind: str              # "bug", "variant", "hand" or "copy"
    sample: str            # the zoo sample or hand it is (a copy: what it copies)
    origin: str            # the independent source it derives from
    part: int | None       # the part a bug lives in (a copy of a bug too); None: full marks expected
    copy_of: str = ""      # a copy: the student it was copied from


def hands() -> dict[str, dict[str, str]]:
    """hand name -> its graded modules' text."""
    return {folder.name: {module: (folder / module).read_text() for module in GRADED_MODULES}
            for folder in sorted(HANDS.iterdir()) if folder.is_dir() and not folder.name.startswith(("_", "."))}


def build(folder, size: int = 200, seed: int = 0) -> list[Member]:
    """Write the class under folder; returns its members. Below the zoo's size (about 130), the class is the
    hands, their copies and a sample of the zoo."""
    folder = pathlib.Path(folder)
    rng = random.Random(seed)
    zoo = ([("bug", s.name, "reference", s.part, s.overrides) for s in fresh(BUGS)]
           + [("variant", s.name, "reference", None, s.overrides) for s in fresh(VARIANTS)])
    own = [("hand", name, f"hand-{name}", None, modules) for name, modules in hands().items()]
    room = max(0, size - 2 * len(own))
    originals = own + (zoo if room >= len(zoo) else rng.sample(zoo, room))
    copied = own + rng.sample(zoo, min(len(zoo), max(0, room - len(zoo))))
    students = [f"student-{n:03d}" for n in range(1, len(originals) + len(copied) + 1)]
    rng.shuffle(students)
    members, written = [], {}
    for (kind, sample, origin, part, overrides), student in zip(originals, students, strict=False):
        written[sample] = write_submission(folder / student, overrides=overrides)
        members.append(Member(student, kind, sample, origin, part))
    by_sample = {m.sample: m for m in members}
    copies = zip(copied, students[len(originals):], strict=True)
    for index, ((_kind, sample, origin, part, _overrides), student) in enumerate(copies):
        package = written[sample] / "student"
        write_submission(folder / student, overrides={module: disguise((package / module).read_text(), seed + index)
                                                      for module in GRADED_MODULES})
        members.append(Member(student, "copy", sample, origin, part, copy_of=by_sample[sample].student))
    return sorted(members, key=lambda m: m.student)
