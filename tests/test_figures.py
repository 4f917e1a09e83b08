"""Every figures block of the documents is written by a script of benchmarks/ that measures it (figures.py):
no block is hand-kept, and none is left empty."""
from __future__ import annotations

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
