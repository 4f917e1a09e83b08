"""Figures written into the documents by the script that measures them, never by hand.

    write("docs/design.md", "one-submission", text)   # replaces what lies between the block's markers

A block in a document is `<!-- BEGIN FIGURES one-submission: benchmarks/bench_grading.py --write-docs -->`, the
figures, and `<!-- END FIGURES one-submission -->`; the writer stamps each with the date, the machine and its
load, so a reader knows when and where they were measured. tests/test_figures.py holds every block to a script
of benchmarks/ that writes it.
"""
from __future__ import annotations

import datetime
import os
import pathlib
import platform
import re

REPO = pathlib.Path(__file__).resolve().parents[1]
BEGIN = re.compile(r"<!-- BEGIN FIGURES (?P<name>[\w-]+): (?P<command>benchmarks/[\w.]+\.py[^>]*?) -->")


def end_marker(name: str) -> str:
    return f"<!-- END FIGURES {name} -->"


def stamp(load: tuple[float, ...] | None = None) -> str:
    """When, where and under what load (given: as the measurement began; else now) the figures were measured."""
    load = ", ".join(f"{x:.2f}" for x in (load or os.getloadavg()))
    when = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return (f"Measured {when} on {platform.node() or 'this machine'} ({os.cpu_count()} cores), load average "
            f"{load} as it began.")


def write(document: str, name: str, text: str, load: tuple[float, ...] | None = None) -> pathlib.Path:
    """Replace block `name` of `document` (relative to the repository) with text and its stamp (load: the load
    average as the measurement began)."""
    path = REPO / document
    source = path.read_text()
    begin = next((m for m in BEGIN.finditer(source) if m["name"] == name), None)
    end = source.find(end_marker(name))
    if begin is None or end < begin.end():
        raise ValueError(f"{document} has no figures block {name!r} (its BEGIN and END markers)")
    path.write_text(source[:begin.end()] + "\n" + text.rstrip("\n") + "\n\n" + stamp(load) + "\n" + source[end:])
    return path


def add_option(parser, document: str, name: str) -> None:
    """The --write-docs option of a script that writes block `name` of `document`."""
    parser.add_argument("--write-docs", action="store_true",
                        help=f"write the figures into {document}'s block {name!r} (with the date, machine and load)")


def blocks(text: str) -> list[tuple[str, str]]:
    """(name, the command that writes it) of every figures block of a document."""
    return [(m["name"], m["command"]) for m in BEGIN.finditer(text)]
