"""Who may have copied: pairwise code similarity across a class, a flag for a human, never points.

    pairs = compare(codes)                       # codes: [Code, ...], one per submission
    write(out, pairs, codes)                     # out/similarity.csv and out/similarity.html

Built on copydetect (winnowing, as MOSS does): each submission's Python files under student/ are joined
into one document, tokenized (names become V, F, O; strings S; comments and spacing go), and fingerprinted
with k-grams of NOISE characters. What the handout already holds (its stubs, signatures and docstrings) is
boilerplate: its fingerprints are removed first, so two students are never alike for the code everyone was
given. Renamed variables and reordered functions leave the fingerprints unchanged, which is the point.

Short, canonical code is the hard case (every correct apply_mask is one masked_fill line): a pair is flagged
only when it shares at least MIN_SHARED tokens beyond the boilerplate and the shares of the two sides' code
found in the other average at least THRESHOLD. (Measured on the generated class, autograder/cohort: a disguised
copy averages 0.87 to 0.94 with its original, independent correct solutions 0.57 at most. The mean, not the
larger share: one student who wrote only the canonical one-liners is wholly contained in everyone else.)
Submissions of the same students (a group) are never compared with each other.
Reading a submission never runs it: the trusted side only unpacks files and tokenizes text.
"""
from __future__ import annotations

import csv
import functools
import html
import io
import itertools
import pathlib
import tempfile
from dataclasses import dataclass

from autograder.engine import submissions
from autograder.engine.files import atomic_write
from autograder.engine.sanitize import csv_cell, printable
from autograder.paths import STUDENT_DIR

NOISE = 25            # k: the shortest match (in tokenized characters) that counts
THRESHOLD = 0.7       # flagged when the two sides' shared parts average at least this
MIN_SHARED = 120      # and the two share at least this many tokenized characters beyond the handout
MAX_FILE_CHARS = 200_000   # a larger file is cut: enough to compare, bounded work on hostile input
SHOWN_PAIRS = 100     # pairs drawn side by side in similarity.html (similarity.csv lists them all)
CSV_COLUMNS = ("first", "second", "similarity", "first_share", "second_share", "shared_tokens",
               "first_spans", "second_spans")


@dataclass(frozen=True)
class Code:
    """One submission's code: its Python files under student/ joined, with where each file starts."""
    name: str                       # as in grades.csv
    slug: str
    people: frozenset[str]          # its students (sid, email or name): a group is not compared within itself
    text: str
    files: tuple[tuple[int, str], ...]   # (offset in text, file name), in order


@dataclass(frozen=True)
class Pair:
    first: Code
    second: Code
    shares: tuple[float, float]     # the part of each side's fingerprinted code found in the other
    shared_tokens: int
    slices: tuple                   # copydetect's copied slices (2 x N arrays of offsets) in each side's text

    @property
    def similarity(self) -> float:
        return sum(self.shares) / 2


def join_files(root: pathlib.Path, skip: dict[str, str] | None = None) -> tuple[str, tuple[tuple[int, str], ...]]:
    """The .py files under root (sorted by path) as one text, with each file's starting offset; a file whose text
    is skip[its name] is left out (a handout file the student did not touch: nothing to compare)."""
    parts, files, offset = [], [], 0
    for path in sorted(root.rglob("*.py")):
        if not path.is_file() or path.is_symlink():
            continue
        name = path.relative_to(root).as_posix()
        text = path.read_bytes()[:MAX_FILE_CHARS].decode("utf-8", errors="replace") + "\n"
        if skip and skip.get(name) == text:
            continue
        files.append((offset, name))
        parts.append(text)
        offset += len(text)
    return "".join(parts), tuple(files)


@functools.cache
def handout_files() -> dict[str, str]:
    """The handout's own student/ package, as students received it: file name -> text (as join_files reads it)."""
    return {path.relative_to(STUDENT_DIR).as_posix(): path.read_text(errors="replace") + "\n"
            for path in sorted(STUDENT_DIR.rglob("*.py"))}


def handout_code() -> str:
    """The boilerplate: the handout's files joined."""
    return "".join(handout_files().values())


def read(submission) -> Code | None:
    """A submission's code, unpacked (never run) into a temporary folder; None when it cannot be unpacked."""
    people = frozenset(s.sid or s.email or s.name for s in submission.submitters)
    with tempfile.TemporaryDirectory(prefix="autograder-similarity-") as folder:
        try:
            submissions.unpack(submission.location, folder)
        except (submissions.SubmissionError, OSError):
            return None
        text, files = join_files(pathlib.Path(folder) / submissions.PACKAGE, handout_files())
    return Code(submission.name, submission.slug, people, text, files)


def _fingerprint(code: str, boilerplate=None):
    """copydetect's fingerprint of Python code (window 1: every k-gram kept, so no match of NOISE is missed)."""
    from copydetect import CodeFingerprint
    return CodeFingerprint("submission.py", NOISE, 1, boilerplate, language="python", fp=io.StringIO(code))


def compare(codes: list[Code], boilerplate: str | None = None, threshold: float = THRESHOLD,
            min_shared: int = MIN_SHARED) -> list[Pair]:
    """Every pair of submissions (not of one group) above the threshold, the most similar first."""
    import numpy as np
    from copydetect import compare_files
    common = np.unique(np.array(list(_fingerprint(handout_code() if boilerplate is None else boilerplate).hashes)))
    prints = [_fingerprint(code.text, common) for code in codes]
    pairs = []
    for (a, print_a), (b, print_b) in itertools.combinations(zip(codes, prints, strict=True), 2):
        if a.people & b.people or not print_a.hashes & print_b.hashes:
            continue
        shared, shares, slices = compare_files(print_a, print_b)
        if shared >= min_shared and sum(shares) / 2 >= threshold:
            pairs.append(Pair(a, b, (float(shares[0]), float(shares[1])), int(shared), slices))
    return sorted(pairs, key=lambda p: (-p.similarity, -p.shared_tokens, p.first.name, p.second.name))


def spans(code: Code, slices) -> str:
    """Where the shared code lies: "masking.py:40-52; heads.py:20-31" (lines in each file)."""
    places = []
    for start, end in zip(*slices, strict=True):
        first, last = _place(code, int(start)), _place(code, max(int(start), int(end) - 1))
        same_file = first[0] == last[0]
        places.append(f"{first[0]}:{first[1]}-{last[1]}" if same_file else f"{first[0]}:{first[1]}-{last[0]}:{last[1]}")
    return "; ".join(places)


def _place(code: Code, offset: int) -> tuple[str, int]:
    """(file name, line in that file) of an offset in the joined text."""
    start, name = next(((s, n) for s, n in reversed(code.files) if s <= offset), (0, "?"))
    return name, code.text.count("\n", start, offset) + 1


def write_csv(out: pathlib.Path, pairs: list[Pair]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for pair in pairs:
        writer.writerow([csv_cell(pair.first.name), csv_cell(pair.second.name), round(pair.similarity, 3),
                         round(pair.shares[0], 3), round(pair.shares[1], 3), pair.shared_tokens,
                         csv_cell(spans(pair.first, pair.slices[0])), csv_cell(spans(pair.second, pair.slices[1]))])
    atomic_write(out / "similarity.csv", buffer.getvalue())


STYLE = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{padding:2px 8px;"
         "border-bottom:1px solid #ddd;text-align:left}.pair{margin:2em 0}.sides{display:flex;gap:1em}"
         ".side{flex:1;min-width:0}pre{background:#f6f6f6;padding:.5em;overflow-x:auto;font-size:12px}"
         "mark{background:#ffd27f}")


def render_html(pairs: list[Pair], compared: int, settings: str) -> str:
    """A self-contained page (no network, no script): the flagged pairs, then each pair's code side by side with
    the shared spans marked. Everything from a submission is escaped."""
    from copydetect.utils import highlight_overlap
    e = html.escape
    rows = "".join(f"<tr><td><a href='#pair{i}'>{i}</a></td><td>{e(printable(p.first.name))}</td>"
                   f"<td>{e(printable(p.second.name))}</td><td>{p.similarity:.0%}</td><td>{p.shared_tokens}</td></tr>"
                   for i, p in enumerate(pairs[:SHOWN_PAIRS], 1))
    sections = []
    for i, pair in enumerate(pairs[:SHOWN_PAIRS], 1):
        sides = []
        for code, slices, share in zip((pair.first, pair.second), pair.slices, pair.shares, strict=True):
            marked, _ = highlight_overlap(code.text, slices, "<mark>", "</mark>", truncate=6, escape_html=True)
            sides.append(f"<div class='side'><h3>{e(printable(code.name))}: {share:.0%} shared</h3>"
                         f"<pre>{marked}</pre></div>")
        sections.append(f"<div class='pair' id='pair{i}'><h2>{i}. {e(printable(pair.first.name))} and "
                        f"{e(printable(pair.second.name))}</h2><div class='sides'>{''.join(sides)}</div></div>")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>Code similarity</title>"
            f"<style>{STYLE}</style></head><body><h1>Code similarity: {len(pairs)} pair(s) to look at</h1>"
            f"<p>{compared} submissions compared ({e(settings)}). The {min(len(pairs), SHOWN_PAIRS)} most similar "
            f"pairs are shown below, side by side; similarity.csv lists every pair. A flag asks a human to look: it "
            f"is never evidence on its own and never costs points. The handout's code is left out; marked spans are "
            f"shared.</p>"
            f"<table><tr><th>#</th><th>first</th><th>second</th><th>similarity</th><th>shared tokens</th></tr>"
            f"{rows}</table>{''.join(sections)}</body></html>")


def settings_line() -> str:
    return (f"copydetect winnowing, k={NOISE}; flagged where the two sides' shared parts average {THRESHOLD:.0%} "
            f"and share at least {MIN_SHARED} tokens; the handout's code is boilerplate; no group compared within")


def write(out: pathlib.Path, found) -> list[Pair]:
    """out/similarity.csv and out/similarity.html for these submissions; returns the flagged pairs."""
    codes = [code for code in map(read, found) if code is not None]
    pairs = compare(codes) if len(codes) > 1 else []   # one submission (Gradescope's run): copydetect never loads
    write_csv(out, pairs)
    atomic_write(out / "similarity.html", render_html(pairs, len(codes), settings_line()))
    return pairs


