"""Who may have copied: disguised copies are found, independent solutions and the handout's code are not; the
measure is copydetect's to the last bit, however the work is spread; the shipped engine knows the handout too."""
from __future__ import annotations

import ast
import functools
import itertools
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest

from autograder.reports import similarity
from autograder.samples import reference_source, write_submission
from autograder.stubs import GRADED_MODULES
from grader.paths import REPO, STUDENT_DIR
from grader.run import submissions, unpacking
from tests.cohort import hands
from tests.cohort.disguise import disguise
from tests.patience import SAFETY_NET_S


def codes_of(folder: pathlib.Path) -> dict[str, similarity.Code]:
    return {s.name: similarity.read(s) for s in submissions.discover([folder])}


def flagged(codes, **settings) -> set[frozenset[str]]:
    return {frozenset((p.first.name, p.second.name)) for p in similarity.compare(list(codes), **settings)}


@pytest.fixture(scope="module")
def hand_class(tmp_path_factory):
    """The reference, each independent hand, and a disguised copy of each."""
    folder = tmp_path_factory.mktemp("class")
    write_submission(folder / "reference")
    for name, modules in hands().items():
        write_submission(folder / name, overrides=modules)
        write_submission(folder / f"{name}-copy", overrides={m: disguise(t, 7) for m, t in modules.items()})
    return codes_of(folder)


def test_every_disguised_copy_is_flagged_with_its_original_and_nothing_else_is(hand_class):
    names = sorted(hands())
    assert len(names) >= 4, "the independent hands are missing"
    assert flagged(hand_class.values()) == {frozenset((name, f"{name}-copy")) for name in names}


def test_the_handouts_own_code_is_never_what_makes_two_submissions_alike(tmp_path):
    """Two students who each kept every stub's docstring and signature and wrote different (trivial) bodies."""
    for name, body in (("a", "return None"), ("b", "pass")):
        write_submission(tmp_path / name, solution=False)
        for module in GRADED_MODULES:
            path = tmp_path / name / "student" / module
            path.write_text(re.sub(r"raise NotImplementedError\(.*\)", body, path.read_text()))
    codes = codes_of(tmp_path).values()
    assert flagged(codes) == set()
    # the defence: without the handout as boilerplate, its docstrings and signatures make them "copies"
    assert flagged(codes, boilerplate="") == {frozenset(("a", "b"))}


def test_members_of_one_group_are_not_compared(tmp_path):
    write_submission(tmp_path / "first")
    write_submission(tmp_path / "second")
    first, second = codes_of(tmp_path).values()
    assert flagged([first, second]) == {frozenset(("first", "second"))}
    shared = frozenset({"0042"})
    assert flagged([similarity.Code(**{**vars(first), "people": shared | {"1"}}),
                    similarity.Code(**{**vars(second), "people": shared})]) == set()


def test_the_report_escapes_the_code_and_names_where_the_shared_spans_are(tmp_path):
    hostile = reference_source("masking.py").replace(
        '"""Part 2', '"""</pre><script>alert(1)</script>\nPart 2', 1)
    for name in ("first", "second<img src=x onerror=alert(1)>"):
        write_submission(tmp_path / name, overrides={"masking.py": hostile})
    pairs = similarity.compare(list(codes_of(tmp_path).values()))
    page = similarity.render_html(pairs, 2, similarity.settings_line())
    ours = page.replace(similarity.UNFOLD, "")   # the page's own script, which reads nothing of a submission
    assert len(pairs) == 1 and "<script" not in ours and "<img" not in page and "&lt;script&gt;" in page
    assert "http" not in page, "the report must open offline"
    places = similarity.spans(pairs[0].first, pairs[0].slices[0])
    assert "masking.py:" in places and "multihead.py:" in places
    assert f"shared: {places.split(';')[0]}" in page   # each side names its files and lines, beside the code


def test_a_disguise_renames_locals_and_reorders_functions_but_keeps_the_interface():
    source = reference_source("masking.py")
    changed = disguise(source, seed=3)
    names = [node.name for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)]
    new_names = [node.name for node in ast.parse(changed).body if isinstance(node, ast.FunctionDef)]
    assert sorted(names) == sorted(new_names) and names != new_names
    def local_names(text):
        return {node.id for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Name)}
    assert "weights" in local_names(source) and "weights" not in local_names(changed)   # a local, renamed
    signatures = {n.name: ast.dump(n.args) for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}
    assert signatures == {n.name: ast.dump(n.args) for n in ast.parse(changed).body if isinstance(n, ast.FunctionDef)}
    assert {m: disguise(reference_source(m), 1) for m in GRADED_MODULES}   # every graded module parses back


def copydetect_pairs(codes, threshold=similarity.THRESHOLD, min_shared=similarity.MIN_SHARED):
    """The oracle: every pair compared by copydetect's own compare_files, as similarity.compare did before vectorising
    -> {(first, second): (shares, shared tokens, slices)} of the pairs it flags."""
    import copydetect
    prints = [similarity._fingerprint(code.text, boilerplate()) for code in codes]
    found = {}
    for (a, print_a), (b, print_b) in itertools.combinations(zip(codes, prints, strict=True), 2):
        if not a.people & b.people and print_a.hashes & print_b.hashes:
            shared, shares, slices = copydetect.compare_files(print_a, print_b)
            if shared >= min_shared and sum(shares) / 2 >= threshold:
                found[a.name, b.name] = ((float(shares[0]), float(shares[1])), int(shared), slices)
    return found


@functools.cache
def boilerplate():
    """The handout's fingerprint hashes, as compare removes them."""
    return np.unique(np.array(list(similarity._fingerprint(similarity.handout_code()).hashes)))


def as_found(pairs) -> dict:
    return {(p.first.name, p.second.name): (p.shares, p.shared_tokens, p.slices) for p in pairs}


def assert_same(ours: dict, theirs: dict) -> None:
    assert ours.keys() == theirs.keys()
    for key, (shares, tokens, slices) in ours.items():
        assert (shares, tokens) == theirs[key][:2], key   # to the last bit, not to 3 decimals
        assert all(np.array_equal(mine, its) for mine, its in zip(slices, theirs[key][2], strict=True)), key


@pytest.mark.parametrize(("workers", "block_cells"), [(1, similarity.BLOCK_CELLS), (2, similarity.BLOCK_CELLS),
                                                     (1, 5000)])
def test_every_pair_is_measured_exactly_as_copydetects_compare_files_measures_it(hand_class, workers, block_cells,
                                                                                 monkeypatch):
    """Every pair that shares anything (threshold 0): the same shares, shared tokens and slices, in one process,
    spread over two, and with a few partners to a matrix (as a huge submission is compared)."""
    monkeypatch.setattr(similarity, "BLOCK_CELLS", block_cells)
    codes = list(hand_class.values())
    everything = {"threshold": 0.0, "min_shared": 0}
    theirs = copydetect_pairs(codes, **everything)
    assert len(theirs) >= 40, "too few pairs share code to prove anything"
    assert_same(as_found(similarity.compare(codes, workers=workers, **everything)), theirs)
    assert_same(as_found(similarity.compare(codes, workers=workers)), copydetect_pairs(codes))


def test_independent_hands_share_code_yet_no_pair_can_be_flagged(hand_class):
    """Every submission's partners all fail the bound (no slices to compute): nothing flagged, as by copydetect."""
    codes = [code for name, code in hand_class.items() if not name.endswith("-copy")]
    assert len(copydetect_pairs(codes, threshold=0.0, min_shared=0)) >= 10
    assert similarity.compare(codes) == [] and copydetect_pairs(codes) == {}


def test_the_pairs_whose_slices_are_skipped_could_never_be_flagged(hand_class):
    """_may_be_flagged's bound, (one side's share + 1) / 2, is above the pair's similarity: every partner it skips
    is, by compare_files, below the threshold (or, as the first of the pair, below MIN_SHARED)."""
    codes = list(hand_class.values())
    known = similarity._indexed([similarity._prints(similarity._fingerprint(code.text, boilerplate()))
                                 for code in codes], similarity.THRESHOLD, similarity.MIN_SHARED)
    theirs = copydetect_pairs(codes, threshold=0.0, min_shared=0)
    rows = [similarity._row(known, a) for a in range(len(codes))]
    skipped = [(a, b) for a, (partners, _, slices) in enumerate(rows) for b in partners.tolist() if b not in slices]
    assert len(skipped) >= 10, "the bound skipped nothing: this test proves nothing"
    for a, b in skipped:
        first, second = sorted((a, b))
        shares, tokens, _ = theirs[codes[first].name, codes[second].name]
        assert sum(shares) / 2 < similarity.THRESHOLD or (a == first and tokens < similarity.MIN_SHARED)


def test_a_share_of_hashes_is_no_bound_on_the_share_of_code():
    """Why the bound is not "the fraction of each side's hashes shared": shared k-grams k apart cover k characters
    each, so the share of code can be many times the share of hashes."""
    isolated = np.zeros((1, 250), bool)
    isolated[0, ::25] = True   # every 25th of 250 consecutive k-grams: 4% of the hashes
    covered = similarity._covered(isolated, np.arange(250))[0]
    assert covered / (250 + similarity.NOISE - 1) > 0.9


def _dies_in_a_worker(parent: int, item: int) -> int:
    if item == 3 and os.getpid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)   # as the kernel kills a process out of memory
    return item * 10


def test_a_worker_killed_breaks_nothing_the_work_is_done_in_this_process():
    assert similarity._spread(_dies_in_a_worker, range(8), os.getpid(), workers=2) == [i * 10 for i in range(8)]


def run_engine(root: pathlib.Path, folder: pathlib.Path, out: pathlib.Path) -> dict:
    """similarity.write of the engine under root on the submissions in folder, in a fresh Python: what it
    imported and which pairs it flagged."""
    script = ("import json, sys\n"
              "from grader.run import submissions\n"
              "from autograder.reports import similarity\n"
              f"pairs = similarity.write(__import__('pathlib').Path({str(out)!r}), "
              f"submissions.discover([{str(folder)!r}])).pairs\n"
              "print(json.dumps({'engine': similarity.__file__, 'modules': sorted(sys.modules),"
              " 'flagged': sorted([p.first.name, p.second.name] for p in pairs)}))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True,
                          timeout=SAFETY_NET_S)
    assert proc.returncode == 0, proc.stderr
    ran = json.loads(proc.stdout.splitlines()[-1])
    assert pathlib.Path(ran["engine"]).is_relative_to(root), "the wrong engine ran"
    return ran


def test_one_submission_loads_neither_copydetect_nor_numpy(tmp_path):
    """A gradebook of one submission: its similarity report is written without the comparison's machinery
    (copydetect, numpy, matplotlib, pygments are not imported)."""
    write_submission(tmp_path / "class" / "only")
    ran = run_engine(REPO, tmp_path / "class", tmp_path)
    assert ran["flagged"] == []
    assert not {"copydetect", "numpy", "matplotlib", "pygments"} & set(ran["modules"])
    assert "0 pair(s)" in (tmp_path / "similarity.html").read_text()


def test_the_report_knows_the_handout_as_boilerplate(tmp_path, monkeypatch):
    """Untouched stubs and one student's edit: nothing flagged. Without the handout's files as boilerplate, the
    handout's code is what they share, and every pair is a "copy"."""
    folder = tmp_path / "class"
    for name in ("stub-a", "stub-b", "stub-c"):
        write_submission(folder / name, solution=False)
    write_submission(folder / "edited", solution=False, overrides={"masking.py": reference_source("masking.py")})
    found = submissions.discover([folder])
    (tmp_path / "out").mkdir()
    assert similarity.write(tmp_path / "out", found).pairs == []
    similarity.handout_files.cache_clear()
    monkeypatch.setattr(similarity, "package_files", lambda _folder: {})   # the defence off
    try:
        assert len(similarity.write(tmp_path / "out", found).pairs) == 6   # every pair of the four
    finally:
        monkeypatch.undo()
        similarity.handout_files.cache_clear()


def test_a_submission_is_read_up_to_a_bound_the_graded_modules_first(tmp_path):
    """2 MB of never-imported files beside the package (within every unpacking limit) once held the batch for a
    minute and 600 MiB: what a submission makes the comparison read is bounded, and its graded code is in it."""
    folder = write_submission(tmp_path / "bulky")
    filler = "x = [" + ", ".join(str(i) for i in range(40_000)) + "]\n"
    for index in range(8):
        (folder / "student" / f"aaa_{index}.py").write_text(filler)   # sorted before every graded module
    (code,) = codes_of(tmp_path).values()
    assert len(code.text) <= similarity.MAX_CODE_CHARS + len(code.files)
    read = {name for _offset, name in code.files}
    assert set(GRADED_MODULES) <= read and len(read) < len(GRADED_MODULES) + 8


def test_the_report_is_made_once_for_the_same_submissions(tmp_path, monkeypatch):
    for name in ("a", "b"):
        write_submission(tmp_path / "class" / name)
    found = submissions.discover([tmp_path / "class"])
    contents = {s.source: unpacking.fingerprint(s.location, str(tmp_path)) for s in found}
    out = tmp_path / "out"
    out.mkdir()
    assert similarity.write_bounded(out, found, contents) == (1, [])   # two copies of the reference
    made = (out / "similarity.csv").stat().st_mtime_ns

    def never(*_args):
        raise AssertionError("compared again")

    monkeypatch.setattr(similarity.bounded, "run", never)
    assert similarity.write_bounded(out, found, contents) == (1, [])
    assert (out / "similarity.csv").stat().st_mtime_ns == made
    changed = {**contents, found[0].source: "unpacked-sha256:other"}
    with pytest.raises(AssertionError, match="compared again"):
        similarity.write_bounded(out, found, changed)
    assert not (out / "similarity.csv").exists(), "a report of other submissions was left in place"


def test_a_similarity_step_past_its_limits_leaves_a_line_not_a_crash(tmp_path, monkeypatch):
    from autograder import reports
    from autograder.reports import bounded
    for name in ("a", "b"):
        write_submission(tmp_path / "class" / name)
    found = submissions.discover([tmp_path / "class"])
    contents = {s.source: unpacking.fingerprint(s.location, str(tmp_path)) for s in found}

    def hoarding(*_args):   # what a comparison made to cost without bound would do
        held = []
        while True:
            held.append(bytearray(64 << 20))

    monkeypatch.setattr(similarity, "write", hoarding)
    monkeypatch.setattr(similarity, "step_limits", lambda _n: bounded.StepLimits(1 << 30, 30, 600.0))
    flagged, why, _unread = reports._similarity(tmp_path, found, contents)
    assert flagged is None and why.startswith("the similarity report was not written: it ran out of memory")


def test_a_graded_submission_the_report_could_not_read_is_an_error_line(tmp_path):
    """Issue 49: an export zip's submissions were removed before the report read them, and each was dropped
    without a word. A graded submission compared with nobody is an error line and is named on the page; an
    error row's unreadable upload (never graded) is not."""
    from autograder import grade_cli, reports
    from grader.row import Row
    from grader.run.batch import BatchRun
    for name in ("a", "b", "gone"):
        write_submission(tmp_path / "class" / name)
    (tmp_path / "class" / "junk.zip").write_bytes(b"not a zip")
    found = submissions.discover([tmp_path / "class"])
    shutil.rmtree(tmp_path / "class" / "gone")
    rows = [Row(status="error" if s.name == "junk" else "graded", submission=s.name, source=s.source) for s in found]
    out = tmp_path / "out"
    out.mkdir()
    run = BatchRun(rows, "", found, {s.source: s.name for s in found})
    written = reports.write(out, run)
    assert written.flagged == 1 and written.not_compared == ["gone"]
    lines, _wrote = grade_cli.report_lines(run, written, str(out))
    assert [line for line in lines if line.startswith("error:")] == [
        "error: similarity: 1 graded submission(s) could not be read for the comparison, so were compared with "
        "nobody: gone"]
    page = (out / "similarity.html").read_text()
    assert "2 submissions compared" in page and "compared with nobody: gone, junk" in page


def test_pairs_are_grouped_into_families_the_most_similar_first(tmp_path):
    """Five students who share code make ten pairs: a TA reads one family, its members and its closest pair. The
    families come in the order a TA should read them (issue 49: by size, a family of five at 90% came before a
    verbatim copy, which was left folded)."""
    def code(name):
        return similarity.Code(name, name, frozenset({name}), "", ((0, "x.py"),))

    def pair(a, b, alike):
        return similarity.Pair(code(a), code(b), (alike, alike), 200, ((), ()))

    ring = ["a1", "a2", "a3", "a4", "a5"]
    pairs = [pair(x, y, 0.9) for i, x in enumerate(ring) for y in ring[i + 1:]]
    pairs += [pair("b1", "b2", 0.99), pair("c1", "c2", 0.72), pair("c2", "c3", 0.75)]   # c1 and c3 only via c2
    found = similarity.families(pairs)
    assert [[c.name for c in f.members] for f in found] == [["b1", "b2"], ring, ["c1", "c2", "c3"]]
    assert len(found[1].pairs) == 10 and found[2].highest == 0.75
    page = similarity.render_html([], 0, "settings")
    assert "Families" in page


def test_a_shared_span_across_two_files_is_named_in_each():
    """A slice from heads.py's end into masking.py's start read "heads.py:3-masking.py:2": now one range each."""
    import numpy as np
    text = "a\nb\nc\n" + "d\ne\n"
    code = similarity.Code("x", "x", frozenset(), text, ((0, "heads.py"), (6, "masking.py")))
    assert similarity.spans(code, np.array([[2], [9]])) == "heads.py:2-3; masking.py:1-2"
    assert similarity.spans(code, np.array([[6], [9]])) == "masking.py:1-2"
    # issue 49: slices that touch or overlap on a line, or follow on the next one, are one range, not two
    assert similarity.spans(code, np.array([[0, 3, 6, 8], [3, 5, 7, 9]])) == "heads.py:1-3; masking.py:1-2"


def test_the_handouts_own_lines_are_never_shown_as_shared(tmp_path):
    """Two copies of the reference share every function, and each function's k-grams reach back over its
    docstring, which is the handout's own: the spans and the marks leave the handout's lines out (issue 49:
    similarity.csv named heads.py:10-29, a signature and docstring every student was given)."""
    for name in ("a", "b"):
        write_submission(tmp_path / name)
    (pair,) = similarity.compare(list(codes_of(tmp_path).values()))
    handout = {line for line in (STUDENT_DIR / "heads.py").read_text().splitlines() if line.strip()}
    code, slices = pair.first, pair.slices[0]
    start = dict((name, offset) for offset, name in code.files)["heads.py"]
    lines = code.text[start:].splitlines()
    ranges = [tuple(map(int, place.split(":")[1].split("-"))) for place in similarity.spans(code, slices).split("; ")
              if place.startswith("heads.py:")]
    shown = [lines[number - 1] for first, last in ranges for number in range(first, last + 1)]
    assert shown and not handout & set(shown), [line for line in shown if line in handout][:3]
    drawn = similarity._marked(code, slices)
    assert "<mark>" in drawn and "Cut the features of every token" not in drawn.split("<h4>heads.py</h4>")[1]


def test_a_drawing_shows_each_file_that_shares_code_under_its_name_with_its_line_numbers():
    """As MOSS and JPlag draw a match: per file, numbered as in that file, the shared spans marked, long unshared
    stretches cut, a file that shares nothing left out, and the submission's text escaped."""
    import numpy as np
    heads = "import torch\n\ndef a():\n    return 1\n" + "x = 2\n" * 10 + "def b():\n    return x < 5\n"
    code = similarity.Code("x", "x", frozenset(), heads + "y = 1\n", ((0, "heads.py"), (len(heads), "masking.py")))
    drawn = similarity._marked(code, np.array([[heads.index("def a"), heads.index("def b")],
                                               [heads.index("\nx = 2"), len(heads) - 1]]))
    assert "<h4>heads.py</h4>" in drawn and "masking.py" not in drawn
    lines = drawn.split("<pre>", 1)[1].removesuffix("</pre>").split("\n")
    assert "<span class='line'>    3</span> <mark>def a():</mark>" in lines
    assert "<span class='line'>   16</span> <mark>    return x &lt; 5</mark>" in lines   # its own numbers, escaped
    assert any("class='cut'" in line for line in lines) and not any(">    9</span>" in line for line in lines)


def test_the_page_draws_each_family_once_by_its_closest_pair(tmp_path):
    """Five copies of one solution make ten pairs and one family: one drawing, not ten (a class of 500 with a
    few families of copies must make a page a TA can read)."""
    for index in range(5):
        write_submission(tmp_path / f"copy{index}")
    pairs = similarity.compare(list(codes_of(tmp_path).values()))
    page = similarity.render_html(pairs, 5, similarity.settings_line())
    assert len(pairs) == 10 and page.count("class='pair'") == 1
    assert "1 family, 10 pair(s) to look at" in page and page.count("<li>") == 9


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WINDOW = (1280, 20000)   # a page a TA scrolls through: a class's tables and one drawing, not every family's code


def drawn(page: pathlib.Path, shot: pathlib.Path) -> np.ndarray:
    """The page as a headless Chromium draws it in a WINDOW-sized window: its pixels (rows, columns, RGB)."""
    from PIL import Image
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--screenshot={shot}", f"--window-size={WINDOW[0]},{WINDOW[1]}", page.as_uri()],
                          capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    with Image.open(shot) as image:
        return np.asarray(image.convert("RGB"))


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium from the system's packages (.ci/run installs it)")
def test_a_browser_draws_the_families_and_one_drawing_with_its_marks_and_the_page_fits(hand_class, tmp_path):
    """What a TA sees, drawn by a real browser: the shared spans marked (the mark colour on screen), numbered
    lines, and a page that ends within the window for a class of 500 with five families, because each family's
    drawing is folded but the first. Unfolded, the same drawings run past it: the fold is what makes it fit."""
    pairs = similarity.compare(list(hand_class.values()))
    assert len(similarity.families(pairs)) == len(hands())
    page = tmp_path / "similarity.html"
    text = similarity.render_html(pairs, 500, similarity.settings_line())
    page.write_text(text)
    pixels = drawn(page, tmp_path / "page.png")
    inked = np.flatnonzero((pixels != 255).any(axis=(1, 2)))
    assert inked[-1] < WINDOW[1] - 1, "the page runs past the window"
    assert ((pixels == (0xFF, 0xD2, 0x7F)).all(axis=2)).sum() > 10_000, "no shared span is marked on screen"
    assert ((pixels == (0x88, 0x88, 0x88)).all(axis=2)).sum() > 1_000, "no line number is drawn"
    # Issue 49: a link to a folded family scrolled to it and left it folded; the page's script opens it.
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                           page.as_uri() + "#family3"], capture_output=True, text=True, timeout=SAFETY_NET_S)
    opened = set(re.findall(r'<details[^>]*id="family(\d+)"[^>]* open', proc.stdout))
    assert opened == {"1", "3"}, proc.stdout[-2000:] + proc.stderr[-2000:]
    page.write_text(text.replace("<details class='pair'", "<details open class='pair'"))
    unfolded = drawn(page, tmp_path / "unfolded.png")
    assert (unfolded[-1] != 255).any() or (unfolded[-200:] != 255).any(), "unfolded, the drawings fit too"
