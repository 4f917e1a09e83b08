"""Every figures block of the documents is written by a script of benchmarks/ that measures it (figures.py):
no block is hand-kept, and none is left empty."""
from __future__ import annotations

import re
import sys

import pytest

from grader.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import figures

DOCUMENTS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])


def test_every_figures_block_names_a_script_that_writes_it():
    found = [(path, name, command) for path in DOCUMENTS for name, command in figures.blocks(path.read_text())]
    assert found, "no figures block in the documents"
    for path, name, command in found:
        script = REPO / command.split()[0]
        assert script.is_file(), f"{path.name}: block {name!r} names {command!r}, which does not exist"
        assert "--write-docs" in command and name in script.read_text(), \
            f"{path.name}: block {name!r} is not one {script.name} writes"
        text = path.read_text()
        inside = text[text.index(f"FIGURES {name}:"):text.index(figures.end_marker(name))]
        assert "Measured " in inside, f"{path.name}: block {name!r} is empty: run {command}"


def test_writing_a_block_replaces_only_it_and_stamps_it(tmp_path, monkeypatch):
    document = tmp_path / "doc.md"
    document.write_text("before\n<!-- BEGIN FIGURES speed: benchmarks/x.py --write-docs -->\nold\n"
                        "<!-- END FIGURES speed -->\nafter\n")
    monkeypatch.setattr(figures, "REPO", tmp_path)
    figures.write("doc.md", "speed", "| a | 1 |")
    text = document.read_text()
    assert text.startswith("before\n") and text.endswith("<!-- END FIGURES speed -->\nafter\n")
    assert "old" not in text and "| a | 1 |" in text and "Measured " in text and "load average" in text
    with pytest.raises(ValueError, match="no figures block 'other'"):
        figures.write("doc.md", "other", "x")


# A measured figure: a number with a unit of time or size, or a ratio ("1.6x", or with the multiplication sign).
MEASURED = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:s|ms|µs|min|minutes?|seconds?|hours?|KiB|MiB|GiB|kB|MB|GB|"
                      r"CPU-s)(?![\w])|(?<![\w.])\d+(?:\.\d+)?\s?[x\N{MULTIPLICATION SIGN}](?![\w])")
CODE = re.compile(r"```.*?```|`[^`\n]*`|(?<=\n)(?: {4}|\t)[^\n]*", re.S)


def prose(text: str) -> str:
    """A document without its figures blocks and its code (spans, fenced and indented blocks: the commands and the
    values a setting or the code declares), where a measured figure has no place."""
    for name, _command in figures.blocks(text):
        start, end = text.index(f"FIGURES {name}:"), text.index(figures.end_marker(name))
        text = text[:start] + text[end:]
    return CODE.sub("", text)


def figures_by_hand(text: str) -> list[str]:
    found = prose(text)
    return [found[max(0, m.start() - 50):m.end()].replace("\n", " ") for m in MEASURED.finditer(found)]


def test_no_measured_figure_is_written_by_hand():
    """Figures measured (times, sizes, ratios) are written by the script that measures them, in a block; a value
    that a setting or the code declares is code (`10 s`); dated findings are CHANGELOG.md's."""
    found = {str(path.relative_to(REPO)): figures_by_hand(path.read_text())
             for path in [*DOCUMENTS, REPO / "handout" / "README.md"]}
    assert {name: hits for name, hits in found.items() if hits} == {}


def test_a_figure_by_hand_is_found_and_one_in_a_block_or_in_code_is_not():
    planted = ("The build took 1.6 s and the zip is 206 KiB, 2.3x smaller.\n"
               "<!-- BEGIN FIGURES speed: benchmarks/x.py --write-docs -->\n| a | 3.5 s |\n<!-- END FIGURES speed -->\n"
               "The limit is `10 s`.\n\n    python x.py   # 4.2 s here\n")
    assert [m.group(0) for m in MEASURED.finditer(prose(planted))] == ["1.6 s", "206 KiB", "2.3x"]
    assert len(figures_by_hand(planted)) == 3
