"""Who may have copied: pairwise code similarity across a class, a flag for a human, never points.

    pairs = compare(codes)                       # codes: [Code, ...], one per submission
    write(out, found)                            # out/similarity.csv and out/similarity.html

Built on copydetect (winnowing, as MOSS does): each submission's Python files under student/ are joined
into one document, tokenized (names become V, F, O; strings S; comments and spacing go), and fingerprinted
with k-grams of NOISE characters. What the handout already holds (its stubs, signatures and docstrings) is
boilerplate: its fingerprints are removed first, so two students are never alike for the code everyone was
given. Renamed variables and reordered functions leave the fingerprints unchanged, which is the point.

Short, canonical code is the hard case (every correct apply_mask is one masked_fill line): a pair is flagged
only when it shares at least MIN_SHARED tokens beyond the boilerplate and the shares of the two sides' code
found in the other average at least THRESHOLD. (Measured on the generated class, tests/cohort: a disguised
copy averages 0.84 to 0.93 with its original, independent correct solutions 0.57 at most. The mean, not the
larger share: one student who wrote only the canonical one-liners is wholly contained in everyone else.)
Submissions of the same students (a group) are never compared with each other.
Reading a submission never runs it: the trusted side only unpacks files and tokenizes text.

How it scales: copydetect still fingerprints each submission (its tokenizer, hashes and boilerplate
removal: the measure stays copydetect's), but pairs are no longer compared one at a time by its compare_files,
which builds a numpy array per shared hash. An inverted index (hash -> the submissions holding it) gives each
submission, as one boolean matrix, which of its k-grams every other submission holds too; the length those
k-grams cover is copydetect's token overlap, summed for all partners at once (_covered). Submissions are spread
over the machine's cores by forked processes (fork: Python's str hashes, which the fingerprints are, stay the
same in every worker); a small class stays in one process. Where the shared code lies (the slices) is computed
only for pairs that can still be flagged: the other side's share is at most 1, so one side's share bounds the
pair's similarity (_may_be_flagged). Shares, shared tokens and slices equal compare_files' to the last bit
(tests/test_similarity.py checks it pair by pair).

The handout is the boilerplate: this report is an instructor's tool, run from the repository after the batch, so
the handout's student/ files are always at hand. A single submission is compared with nobody: neither copydetect
nor numpy is imported.
"""
from __future__ import annotations

import bisect
import csv
import functools
import html
import io
import itertools
import json
import os
import pathlib
import re
import tempfile
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from autograder.reports import bounded
from grader.paths import STUDENT_DIR
from grader.run import unpacking
from grader.run.files import atomic_write
from grader.sanitize import csv_cell, printable

if TYPE_CHECKING:
    import numpy as np

NOISE = 25            # k: the shortest match (in tokenized characters) that counts
THRESHOLD = 0.7       # flagged when the two sides' shared parts average at least this
MIN_SHARED = 120      # and the two share at least this many tokenized characters beyond the handout
MAX_FILE_CHARS = 200_000   # a larger file is cut: enough to compare, bounded work on hostile input
MAX_CODE_CHARS = 300_000   # a submission's files together (the handout's student/ is 36 KB): the rest is not read
SHOWN_PAIRS = 100     # pairs drawn side by side in similarity.html (similarity.csv lists them all)
CSV_COLUMNS = ("first", "second", "similarity", "first_share", "second_share", "shared_tokens",
               "first_spans", "second_spans", "family")
PARALLEL_FROM = 60    # submissions: a smaller class is compared in one process (forking costs more than it saves)
BLOCK_CELLS = 1 << 21  # at most this many (partner, k-gram) cells in one matrix: memory bounded on huge files
REPORT_FILES = ("similarity.csv", "similarity.html")
KEY_FILE = "similarity.json"   # what the report was made of (a digest) and how many pairs it flags
STEP_MEMORY_BYTES = 4 << 30    # the step's address space (numpy and the fork pool's workers each)


@dataclass(frozen=True)
class Code:
    """One submission's code: its Python files under student/ joined, with where each file starts."""
    name: str                       # as in grades.csv
    slug: str
    people: frozenset[str]          # its students (sid, email or name): a group is not compared within itself
    text: str
    files: tuple[tuple[int, str], ...]   # (offset in text, file name), in order
    given: tuple[tuple[int, int], ...] = ()   # (start, end) of the handout's own lines in text, ascending: given()


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
    is skip[its name] is left out (a handout file the student did not touch: nothing to compare). At most
    MAX_FILE_CHARS of a file and MAX_CODE_CHARS in all are read, the graded modules first: what a submission
    makes the comparison cost is bounded, whatever else it uploads."""
    texts = {}
    paths = sorted(path for path in root.rglob("*.py") if path.is_file() and not path.is_symlink())
    graded = unpacking.graded_modules()
    room = MAX_CODE_CHARS
    for path in sorted(paths, key=lambda p: p.relative_to(root).as_posix() not in graded):
        name = path.relative_to(root).as_posix()
        with open(path, "rb") as handle:
            text = handle.read(min(MAX_FILE_CHARS, room)).decode("utf-8", errors="replace") + "\n"
        if skip and skip.get(name) == text:
            continue
        texts[name] = text
        room -= len(text) - 1
        if room <= 0:
            break
    parts, files, offset = [], [], 0
    for name in (path.relative_to(root).as_posix() for path in paths):
        if name in texts:
            files.append((offset, name))
            parts.append(texts[name])
            offset += len(texts[name])
    return "".join(parts), tuple(files)


@functools.cache
def handout_files() -> dict[str, str]:
    """The handout's own student/ package, as students received it: file name -> text (as join_files reads it).
    Without them every untouched stub would count as shared code, and every pair as a copy."""
    return package_files(STUDENT_DIR)


def package_files(folder: pathlib.Path) -> dict[str, str]:
    """The .py files under folder (sorted by path): file name -> text, with the newline join_files adds."""
    return {path.relative_to(folder).as_posix(): path.read_text(errors="replace") + "\n"
            for path in sorted(folder.rglob("*.py"))}


def handout_code() -> str:
    """The boilerplate: the handout's files joined."""
    return "".join(handout_files().values())


def read(submission) -> Code | None:
    """A submission's code, unpacked (never run) into a temporary folder; None when it cannot be unpacked."""
    people = frozenset(_people(submission))
    with tempfile.TemporaryDirectory(prefix="autograder-similarity-") as folder:
        try:
            unpacking.unpack(submission.location, folder, read_sources=False)   # compared as text, never run
        except (unpacking.SubmissionError, OSError):
            return None
        text, files = join_files(pathlib.Path(folder) / unpacking.PACKAGE, handout_files())
    return Code(submission.name, submission.slug, people, text, files, given(text, files))


def given(text: str, files: tuple[tuple[int, str], ...]) -> tuple[tuple[int, int], ...]:
    """Where a submission's joined text holds the handout's own lines (its stubs' signatures and docstrings, kept as
    given), matched line by line with the handout's file of the same name: (start, end), ascending. The comparison
    leaves the handout's fingerprints out, yet a shared k-gram that starts in a docstring and ends in the student's
    code reaches back over it: the spans shown and marked leave these out (beyond())."""
    import difflib
    handout = handout_files()
    ranges = []
    for start, end, name in _each_file(text, files):
        if name not in handout:
            continue
        mine = text[start:end].splitlines(keepends=True)
        at = list(itertools.accumulate(map(len, mine), initial=start))
        matcher = difflib.SequenceMatcher(None, handout[name].splitlines(keepends=True), mine, autojunk=False)
        ranges += [(at[block.b], at[block.b + block.size]) for block in matcher.get_matching_blocks() if block.size]
    return tuple(ranges)


def _each_file(text: str, files: tuple[tuple[int, str], ...]) -> list[tuple[int, int, str]]:
    """(start, end, file name) of each file in a submission's joined text."""
    return [(start, end, name) for (start, name), end in zip(files, [start for start, _ in files[1:]] + [len(text)],
                                                             strict=False)]   # no files: no text either


def beyond(code: Code, slices) -> list[tuple[int, int]]:
    """The shared slices (2 x N: starts, ends in code.text) less the handout's own lines (code.given): what a TA is
    shown as shared. The measure (shares, shared tokens) is copydetect's, untouched."""
    kept = []
    for start, end in zip(*slices.tolist(), strict=True):
        first = max(0, bisect.bisect_right(code.given, (start, start)) - 1)   # the last given range from before start
        for given_start, given_end in code.given[first:]:
            if given_start >= end:
                break
            if given_start > start:
                kept.append((start, given_start))
            start = max(start, given_end)
        if start < end:
            kept.append((start, end))
    return kept


def _people(submission) -> list[str]:
    """Its students, each by sid, else email, else name: a group is not compared within itself."""
    return [s.sid or s.email or s.name for s in submission.submitters]


def _read_of(found, index: int) -> Code | None:
    return read(found[index])


def _fingerprint(code: str, boilerplate=None):
    """copydetect's fingerprint of Python code (window 1: every k-gram kept, so no match of NOISE is missed)."""
    from copydetect import CodeFingerprint
    return CodeFingerprint("submission.py", NOISE, 1, boilerplate, language="python", fp=io.StringIO(code))


@dataclass(frozen=True)
class _Prints:
    """One submission's fingerprints, as arrays: what the comparison reads of copydetect's CodeFingerprint."""
    positions: np.ndarray   # where each kept k-gram starts in the tokenized text, ascending
    hashes: np.ndarray      # each one's hash (in _Index: the hash's number in the class's index)
    coverage: float         # copydetect's token_coverage: the tokenized characters the kept k-grams cover
    offsets: np.ndarray     # copydetect's offsets: from the tokenized text back to the submitted one


def _prints(fingerprint) -> _Prints:
    """copydetect's hash -> [positions] as two arrays in the order of the text: what the rows compare."""
    import numpy as np
    positions = [np.asarray(where, np.int64) for where in fingerprint.hash_idx.values()]
    hashes = np.repeat(np.fromiter(fingerprint.hash_idx, np.int64, len(positions)), [len(p) for p in positions])
    positions = np.concatenate(positions) if positions else np.zeros(0, np.int64)
    order = np.argsort(positions, kind="stable")
    return _Prints(positions[order], hashes[order], float(fingerprint.token_coverage), fingerprint.offsets)


def _prints_of(texts_and_boilerplate, index: int) -> _Prints:
    texts, boilerplate = texts_and_boilerplate
    return _prints(_fingerprint(texts[index], boilerplate))


@dataclass(frozen=True)
class _Index:
    """The class's fingerprints and which submissions hold each hash (what every row of the comparison reads:
    forked, never pickled)."""
    prints: list[_Prints]    # hashes numbered 0 .. len(start) - 2
    holders: np.ndarray     # the submissions holding hash number h: holders[start[h]:start[h + 1]]
    start: np.ndarray
    threshold: float
    min_shared: int

    def holding(self, numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every (k-gram, submission holding its hash) of these hash numbers, as (index in numbers, submission)."""
        import numpy as np
        first, count = self.start[numbers], self.start[numbers + 1] - self.start[numbers]
        which = np.repeat(np.arange(len(numbers)), count)
        rank = np.arange(len(which)) - np.repeat(np.cumsum(count) - count, count)
        return which, self.holders[first[which] + rank]


def _indexed(prints: list[_Prints], threshold: float, min_shared: int) -> _Index:
    """Number the class's hashes and list, for each, the submissions holding it: an inverted index, as MOSS keeps."""
    import numpy as np
    values, numbers = np.unique(np.concatenate([p.hashes for p in prints]), return_inverse=True)
    numbered = np.split(numbers, np.cumsum([len(p.hashes) for p in prints])[:-1])
    held = [np.unique(n) for n in numbered]
    by_hash = np.concatenate(held)
    order = np.argsort(by_hash, kind="stable")
    holders = np.repeat(np.arange(len(held)), [len(h) for h in held])[order]
    start = np.searchsorted(by_hash[order], np.arange(len(values) + 1))
    return _Index([replace(p, hashes=n) for p, n in zip(prints, numbered, strict=True)], holders, start,
                  threshold, min_shared)


def _covered(shared: np.ndarray, positions: np.ndarray, k: int = NOISE) -> np.ndarray:
    """For each row of shared (which of one submission's k-grams, starting at positions, one other submission
    holds too): the tokenized characters those k-grams cover, the union of [p, p + k). That is copydetect's token
    overlap, the summed length of get_copied_slices' slices: each shared k-gram adds its distance from the
    previous one, k at most (k for the first)."""
    import numpy as np
    last = np.maximum.accumulate(np.where(shared, positions, -k), axis=1)
    previous = np.concatenate([np.full((len(shared), 1), -k), last[:, :-1]], axis=1)
    return np.where(shared, np.minimum(positions - previous, k), 0).sum(axis=1)


def _slices(shared: np.ndarray, mine: _Prints, k: int = NOISE) -> list[np.ndarray]:
    """copydetect's copied slices (2 x N: starts, ends in the submitted text) for each row of shared, as
    get_copied_slices and compare_files make them: shared k-grams less than k apart run together."""
    import numpy as np
    if len(shared) == 0:
        return []
    rows, columns = np.nonzero(shared)   # row by row, positions ascending (each row holds at least one)
    at = mine.positions[columns]
    begins = np.ones(len(at), bool)
    begins[1:] = (rows[1:] != rows[:-1]) | (np.diff(at) > k - 1)
    ends = np.append(begins[1:], True)
    starts, stops = _submitted(mine.offsets, at[begins]), _submitted(mine.offsets, at[ends] + k)
    cuts = np.searchsorted(rows[begins], np.arange(len(shared) + 1)).tolist()   # row r: slices cuts[r]:cuts[r + 1]
    return [np.array([starts[i:j], stops[i:j]]) for i, j in itertools.pairwise(cuts)]


def _submitted(offsets: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Offsets in the tokenized text -> in the submitted text (compare_files' last step)."""
    import numpy as np
    if len(offsets) == 0:
        return at
    return at + offsets[:, 1][np.clip(np.searchsorted(offsets[:, 0], at), 0, offsets.shape[0] - 1)]


def _may_be_flagged(a: int, others: np.ndarray, covered: np.ndarray, known: _Index) -> np.ndarray:
    """Which of a's partners can still be flagged with it, judged from a's side alone. The other side's share is
    at most 1 (a part of its covered length), so the pair's similarity is at most (a's share + 1) / 2: a true
    upper bound, also in floating point (rounding is monotonic). Where a is the pair's first submission, its
    covered length is the pair's shared tokens, which must reach min_shared."""
    bound = (covered / known.prints[a].coverage + 1.0) / 2
    return (bound >= known.threshold) & ((others < a) | (covered >= known.min_shared))


def _row(known: _Index, a: int) -> tuple[np.ndarray, np.ndarray, dict[int, np.ndarray]]:
    """Submission a against every other that holds one of its k-grams: those others, the length of a's tokenized
    code each shares, and a's copied slices with each that may be flagged."""
    import numpy as np
    mine = known.prints[a]
    others, row, which = _partners(known, a)
    covered, slices = np.zeros(len(others), np.int64), {}
    step = max(1, BLOCK_CELLS // max(1, len(mine.positions)))
    for first in range(0, len(others), step):   # a block of partners at a time: memory stays bounded
        block, inside = slice(first, first + step), (row >= first) & (row < first + step)
        shared = np.zeros((len(others[block]), len(mine.positions)), bool)   # partner x a's k-grams
        shared[row[inside] - first, which[inside]] = True
        covered[block] = _covered(shared, mine.positions)
        maybe = _may_be_flagged(a, others[block], covered[block], known)
        slices.update(zip(others[block][maybe].tolist(), _slices(shared[maybe], mine), strict=True))
    return others, covered, slices


def _partners(known: _Index, a: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The submissions holding any of a's k-grams (ascending), and for every (k-gram of a, other holder) its
    holder's place among them and the k-gram's place in a."""
    import numpy as np
    which, holder = known.holding(known.prints[a].hashes)
    which, holder = which[holder != a], holder[holder != a]
    others = np.flatnonzero(np.bincount(holder, minlength=len(known.prints)))
    place = np.zeros(len(known.prints), np.int64)
    place[others] = np.arange(len(others))
    return others, place[holder], which


_SHARED = None   # what _spread's forked workers read: set just before they fork


def _with_shared(function, item):
    return function(_SHARED, item)


def _workers(submissions: int) -> int:
    """How many processes compare a class of this size: the cores this process may use (1 for a small class,
    or where processes cannot fork)."""
    if submissions < PARALLEL_FROM:
        return 1
    import multiprocessing
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _spread(function, items: range, shared, workers: int) -> list:
    """[function(shared, item) for item in items], spread over `workers` forked processes. shared reaches them
    by fork (never pickled; Python's str hashes, which the fingerprints are, stay the same); items and results
    travel. A worker that dies (killed for its memory) breaks the pool instead of hanging it: the work is then
    done in this process."""
    global _SHARED
    if workers <= 1 or len(items) < 2:
        return [function(shared, item) for item in items]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    _SHARED = shared
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(functools.partial(_with_shared, function), items,
                                 chunksize=max(1, len(items) // (4 * workers))))
    except BrokenProcessPool:
        return [function(shared, item) for item in items]
    finally:
        _SHARED = None


def compare(codes: list[Code], boilerplate: str | None = None, threshold: float = THRESHOLD,
            min_shared: int = MIN_SHARED, workers: int | None = None) -> list[Pair]:
    """Every pair of submissions (not of one group) above the threshold, the most similar first.
    workers: processes to spread the work over (default: the cores, 1 below PARALLEL_FROM submissions)."""
    if len(codes) < 2:   # nothing to compare: neither copydetect nor numpy is imported
        return []
    import numpy as np
    workers = _workers(len(codes)) if workers is None else workers
    common = np.unique(np.array(list(_fingerprint(handout_code() if boilerplate is None else boilerplate).hashes)))
    prints = _spread(_prints_of, range(len(codes)), ([code.text for code in codes], common), workers)
    known = _indexed(prints, threshold, min_shared)
    return _pairs(codes, known, _spread(_row, range(len(codes)), known, workers))


def _pairs(codes: list[Code], known: _Index, rows: list) -> list[Pair]:
    """The flagged pairs, from every submission's row: shares and shared tokens as compare_files gives them (the
    first submission's covered length; each side's covered length over its token coverage)."""
    import numpy as np
    covered = np.zeros((len(codes), len(codes)), np.int64)
    for a, (others, lengths, _) in enumerate(rows):
        covered[a, others] = lengths
    coverage = np.array([p.coverage for p in known.prints])
    first, second = np.nonzero(np.triu(covered, 1))
    shared = covered[first, second]
    shares = shared / coverage[first], covered[second, first] / coverage[second]
    flagged = (shared >= known.min_shared) & ((shares[0] + shares[1]) / 2 >= known.threshold)
    pairs = [Pair(codes[a], codes[b], (float(s), float(t)), int(tokens), (rows[a][2][b], rows[b][2][a]))
             for a, b, s, t, tokens in zip(first[flagged].tolist(), second[flagged].tolist(), shares[0][flagged],
                                           shares[1][flagged], shared[flagged], strict=True)
             if not codes[a].people & codes[b].people]
    return sorted(pairs, key=lambda p: (-p.similarity, -p.shared_tokens, p.first.name, p.second.name))


def spans(code: Code, slices) -> str:
    """Where the shared code lies: "masking.py:40-52; heads.py:20-31" (lines in each file). slices: 2 x N."""
    return _Places(code).spans(slices)


class _Places:
    """Places in one submission's joined text: (file name, line in that file) of an offset. Made once per
    submission for a class's report, which names the same submission's places in hundreds of pairs."""

    def __init__(self, code: Code):
        self.code = code
        self.breaks = [match.start() for match in re.finditer("\n", code.text)]
        self.starts = [start for start, _ in code.files]
        # [i]: of an offset that i files start at or before ("?" and the text's start when none does)
        self.names = ["?", *(name for _, name in code.files)]
        self.lines_before = [0, *(bisect.bisect_left(self.breaks, start) for start in self.starts)]

    def place(self, offset: int) -> tuple[str, int]:
        i = bisect.bisect_right(self.starts, offset)
        return self.names[i], bisect.bisect_left(self.breaks, offset) - self.lines_before[i] + 1

    def spans(self, slices) -> str:
        """The shared slices beyond the handout's lines as line ranges of one file each: a slice across files (a
        file's end and the next one's start) is cut at each file's start, so a reader finds every piece in its own
        file; ranges of one file that touch or overlap are one."""
        places: list[list] = []   # [file, first line, last line]
        for start, end in beyond(self.code, slices):
            last = max(start, end - 1)
            inside = self.starts[bisect.bisect_right(self.starts, start):bisect.bisect_right(self.starts, last)]
            for begin, stop in itertools.pairwise([start, *inside, last + 1]):
                (name, line), (_, last_line) = self.place(begin), self.place(stop - 1)
                if places and places[-1][0] == name and line <= places[-1][2] + 1:
                    places[-1][2] = max(places[-1][2], last_line)
                else:
                    places.append([name, line, last_line])
        return "; ".join(f"{name}:{line}-{last_line}" for name, line, last_line in places)


@dataclass(frozen=True)
class Family:
    """Submissions linked by flagged pairs, directly or through one another: a family of copies is one row for a
    TA, however many pairs it makes (five students who share code make ten pairs)."""
    members: tuple[Code, ...]       # by name
    pairs: tuple[Pair, ...]         # its flagged pairs, the most similar first

    @property
    def highest(self) -> float:
        return max(pair.similarity for pair in self.pairs)


def families(pairs: list[Pair]) -> list[Family]:
    """The connected groups of the flagged pairs, in the order a TA should read them: the most similar first (its
    closest pair's share of code beyond the handout), then the most code shared, then the largest. A family of
    five at 70% ranks below a verbatim copy."""
    parent: dict[Code, Code] = {}

    def root(code: Code) -> Code:
        while parent.setdefault(code, code) is not code:
            parent[code] = parent[parent[code]]   # halve the path as it is walked
            code = parent[code]
        return code

    for pair in pairs:
        parent[root(pair.first)] = root(pair.second)
    groups: dict[Code, list[Pair]] = {}
    for pair in pairs:
        groups.setdefault(root(pair.first), []).append(pair)
    found = [Family(tuple(sorted({c for p in group for c in (p.first, p.second)}, key=lambda c: c.name)),
                    tuple(sorted(group, key=lambda p: (-p.similarity, -p.shared_tokens)))) for group in groups.values()]
    return sorted(found, key=lambda f: (-f.highest, -f.pairs[0].shared_tokens, -len(f.members), f.members[0].name))


def write_csv(out: pathlib.Path, pairs: list[Pair]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    codes = {code for pair in pairs for code in (pair.first, pair.second)}
    names, places = {code: csv_cell(code.name) for code in codes}, {code: _Places(code) for code in codes}
    family_of = {id(pair): number for number, family in enumerate(families(pairs), 1) for pair in family.pairs}
    for pair in pairs:
        writer.writerow([names[pair.first], names[pair.second], round(pair.similarity, 3),
                         round(pair.shares[0], 3), round(pair.shares[1], 3), pair.shared_tokens,
                         csv_cell(places[pair.first].spans(pair.slices[0])),
                         csv_cell(places[pair.second].spans(pair.slices[1])), family_of[id(pair)]])
    atomic_write(out / "similarity.csv", buffer.getvalue())


STYLE = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{padding:2px 8px;"
         "border-bottom:1px solid #ddd;text-align:left}.pair{margin:2em 0}.sides{display:flex;gap:1em}"
         ".side{flex:1;min-width:0}pre{background:#f6f6f6;padding:.5em;overflow-x:auto;font-size:12px}"
         "mark{background:#ffd27f}.line{color:#888;user-select:none}.cut{color:#888}h4{margin:.8em 0 .2em}"
         "summary h2{display:inline;cursor:pointer}.error{color:#b00000;font-weight:bold}")


# A link to a folded <details> scrolls to it but leaves it folded, in every browser: the page's one script opens
# the family a link (or the address's fragment) names. It reads nothing from a submission.
UNFOLD = ("<script>function unfold(hash){var t=hash&&document.getElementById(hash.slice(1));"
          "if(t&&t.tagName==='DETAILS'){t.open=true;t.scrollIntoView();}}"
          "document.addEventListener('click',function(e){var a=e.target.closest&&e.target.closest('a[href^=\"#\"]');"
          "if(a)unfold(a.getAttribute('href'));});"
          "addEventListener('hashchange',function(){unfold(location.hash);});unfold(location.hash);</script>")


def render_html(pairs: list[Pair], compared: int, settings: str, unread: list[str] | None = None) -> str:
    """A self-contained page (no network; one script, UNFOLD): the families of flagged pairs, the pairs, then for
    each family (at most SHOWN_PAIRS, in the order of families()) its closest pair's code side by side with the
    shared spans marked: one drawing per family, every one but the first folded, so a class of 500 makes a page of
    its tables, not of hundreds of drawings. unread: the submissions that could not be read, so compared with nobody.
    Everything from a submission is escaped."""
    e = html.escape
    found = families(pairs)
    family_of = {id(pair): n for n, family in enumerate(found, 1) for pair in family.pairs}
    family_rows = "".join(
        f"<tr><td><a href='#family{n}'>{n}</a></td><td>{len(f.members)}</td>"
        f"<td>{e(', '.join(printable(c.name) for c in f.members))}</td><td>{len(f.pairs)}</td>"
        f"<td>{f.highest:.0%}</td></tr>" for n, f in enumerate(found, 1))
    rows = "".join(f"<tr><td>{i}</td><td>{e(printable(p.first.name))}</td><td>{e(printable(p.second.name))}</td>"
                   f"<td>{p.similarity:.0%}</td><td>{p.shared_tokens}</td>"
                   f"<td><a href='#family{family_of[id(p)]}'>{family_of[id(p)]}</a></td></tr>"
                   for i, p in enumerate(pairs[:SHOWN_PAIRS], 1))
    sections = []
    for n, family in enumerate(found[:SHOWN_PAIRS], 1):
        pair = family.pairs[0]
        sides = [f"<div class='side'><h3>{e(printable(code.name))}: {share:.0%} shared</h3>"
                 f"<p>shared: {e(printable(spans(code, slices)))}</p>{_marked(code, slices)}</div>"
                 for code, slices, share in zip((pair.first, pair.second), pair.slices, pair.shares, strict=True)]
        others = "".join(f"<li>{e(printable(p.first.name))} and {e(printable(p.second.name))}: {p.similarity:.0%}"
                         f"</li>" for p in family.pairs[1:])
        # Each drawing folded but the first (a click on it, or a link to it, unfolds it), so that a class with many
        # families is a page of its tables, not of every family's code.
        sections.append(f"<details class='pair' id='family{n}'{' open' if n == 1 else ''}><summary><h2>Family {n}: "
                        f"{e(printable(pair.first.name))} and {e(printable(pair.second.name))}, its closest pair"
                        f"</h2></summary>"
                        + (f"<p>Its other pairs:</p><ul>{others}</ul>" if others else "")
                        + f"<div class='sides'>{''.join(sides)}</div></details>")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>Code similarity</title>"
            f"<style>{STYLE}</style></head><body><h1>Code similarity: {len(found)} famil"
            f"{'y' if len(found) == 1 else 'ies'}, {len(pairs)} pair(s) to look at</h1>"
            + (f"<p class='error'>{len(unread)} submission(s) could not be read, so compared with nobody: "
               f"{e(', '.join(printable(name) for name in unread))}</p>" if unread else "")
            + f"<p>{compared} submissions compared ({e(settings)}). Each family (submissions linked by flagged pairs, "
            f"directly or through one another) is drawn below once, by its closest pair side by side (the first "
            f"unfolded; click a family, or a link to it, to unfold it); similarity.csv "
            f"lists every pair with its family. A flag asks a human to look: it is never evidence on its own and "
            f"never costs points. The handout's code is left out (its lines are never marked); marked spans are "
            f"shared.</p>"
            f"<h2>Families, the most similar first (read them in this order)</h2><table><tr><th>family</th>"
            f"<th>members</th><th>who</th>"
            f"<th>pairs</th><th>highest similarity</th></tr>{family_rows}</table>"
            f"<h2>Pairs, the most similar first</h2><table><tr><th>#</th><th>first</th><th>second</th>"
            f"<th>similarity</th><th>shared tokens</th><th>family</th></tr>{rows}</table>{''.join(sections)}"
            f"{UNFOLD}</body></html>")


CONTEXT_LINES = 3   # unshared lines kept on each side of a shared stretch in a drawing; the rest is cut


def _marked(code: Code, slices) -> str:
    """The submission's files that share code, each under its own name with its own line numbers, the shared
    spans marked and unshared stretches longer than the context cut (as MOSS and JPlag draw a match per file).
    Everything from the submission is escaped."""
    shared = bytearray(len(code.text))
    for start, end in beyond(code, slices):
        shared[start:end] = b"\x01" * (end - start)
    drawn = []
    for start, end, name in _each_file(code.text, code.files):
        if not any(shared[start:end]):
            continue
        lines, offset = [], start
        for text in code.text[start:end].splitlines(keepends=True):
            lines.append((offset, text.rstrip("\n")))
            offset += len(text)
        marked = [any(shared[at:at + max(1, len(text))]) for at, text in lines]
        keep = [any(marked[max(0, i - CONTEXT_LINES):i + CONTEXT_LINES + 1]) for i in range(len(lines))]
        rows, cut = [], False
        for number, ((at, text), kept) in enumerate(zip(lines, keep, strict=True), 1):
            if not kept:
                if not cut:
                    rows.append("<span class='cut'>      …</span>")
                cut = True
                continue
            cut = False
            rows.append(f"<span class='line'>{number:5d}</span> {_line(text, shared[at:at + len(text)])}")
        drawn.append(f"<h4>{html.escape(printable(name))}</h4><pre>{chr(10).join(rows)}</pre>")
    return "".join(drawn)


def _line(text: str, shared: bytearray) -> str:
    """One line escaped for HTML, its shared characters marked."""
    pieces, start = [], 0
    for index in range(1, len(text) + 1):
        if index == len(text) or shared[index] != shared[start]:
            piece = html.escape(text[start:index])
            pieces.append(f"<mark>{piece}</mark>" if shared[start] else piece)
            start = index
    return "".join(pieces)


def settings_line() -> str:
    return (f"copydetect winnowing, k={NOISE}; flagged where the two sides' shared parts average {THRESHOLD:.0%} "
            f"and share at least {MIN_SHARED} tokens; the handout's code is boilerplate; no group compared within")


def write_bounded(out: pathlib.Path, found, contents: dict[str, str]) -> tuple[int, list[int]]:
    """write(), run as a class-level step within limits of its own (bounded.py), and not run again when out/
    already holds the report of exactly these submissions (their contents, names and students) with these
    settings: a resume with nothing new reuses it. Returns how many pairs are flagged and the submissions that
    could not be read (Report.unread); raises bounded.Stopped (and leaves no report: an earlier one would describe
    other submissions)."""
    import hashlib
    key = hashlib.sha256(json.dumps([settings_line(), handout_code(), MAX_CODE_CHARS, MAX_FILE_CHARS, [
        [s.source, contents.get(s.source), s.name, s.slug, sorted(_people(s))] for s in found]],
        ensure_ascii=True).encode()).hexdigest()
    try:
        cached = json.loads((out / KEY_FILE).read_text())
        if cached["key"] == key and all((out / name).is_file() for name in REPORT_FILES):
            return int(cached["flagged"]), [int(index) for index in cached["unread"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    for name in (KEY_FILE, *REPORT_FILES):
        (out / name).unlink(missing_ok=True)

    def step() -> dict:
        report = write(out, found)
        return {"flagged": len(report.pairs), "unread": report.unread}

    made = bounded.run(step, step_limits(len(found)))
    atomic_write(out / KEY_FILE, json.dumps({"key": key, **made}))
    return made["flagged"], made["unread"]


def step_limits(submissions_compared: int) -> bounded.StepLimits:
    """The similarity step's limits: generous for a class (400 submissions take about 15 CPU-s), bounded for one
    hostile submission (each reads at most MAX_CODE_CHARS)."""
    cpu = 60 + submissions_compared
    return bounded.StepLimits(memory_bytes=STEP_MEMORY_BYTES, cpu_seconds=cpu, load_free_seconds=2.0 * cpu)


@dataclass(frozen=True)
class Report:
    pairs: list[Pair]     # flagged, the most similar first
    unread: list[int]     # the submissions (their places in found) that could not be read: compared with nobody


def write(out: pathlib.Path, found) -> Report:
    """out/similarity.csv and out/similarity.html for these submissions: the flagged pairs, and which submissions
    could not be read (gone, or not unpackable: the page names them)."""
    read = _spread(_read_of, range(len(found)), found, _workers(len(found)))
    codes = [code for code in read if code is not None]
    unread = [index for index, code in enumerate(read) if code is None]
    pairs = compare(codes)
    write_csv(out, pairs)
    atomic_write(out / "similarity.html", render_html(pairs, len(codes), settings_line(),
                                                      [found[index].name for index in unread]))
    return Report(pairs, unread)


