"""Text that came from a submission, made safe for the people who read it.

Exception names and messages, printed output and even file and student names are chosen by
students. Before they reach a terminal (the progress line, the closing table), a CSV cell or a
feedback document, terminal escape sequences (colour, cursor moves, clipboard writes, titles),
other control characters and text-direction overrides are removed, and a CSV cell that a
spreadsheet would read as a formula (=, +, -, @, tab, CR first) is quoted with an apostrophe.
Whatever its bytes, such text must reach every output file as valid UTF-8: a name or message decoded
from bytes that are not UTF-8 carries lone surrogates (Python's surrogateescape), which no UTF-8 writer
accepts, so every one becomes U+FFFD (valid_text, also applied by printable).
"""
from __future__ import annotations

import re

# ESC [ ... final (CSI), ESC ] ... BEL or ST (OSC: titles, clipboard, links), ESC P/X/^/_ ... ST, ESC + one char.
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[PX^_][^\x1b]*(?:\x1b\\)?|.?)"
                     r"|\x9b[0-?]*[ -/]*[@-~]?|\x9d[^\x07\x9c]*[\x07\x9c]?")
# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and isolates.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(value):
    """value with every string in it (nested in dicts, lists and tuples too) encodable as UTF-8."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {valid_text(key): valid_text(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(valid_text(item) for item in value)
    return value


def printable(text: str, *, newlines: bool = False, limit: int | None = None) -> str:
    """text without escape sequences or control characters; newlines and tabs kept only if asked."""
    text = _ESCAPE.sub("", valid_text(str(text)))
    if not newlines:
        text = re.sub(r"[\r\n\t]+", " ", text)
    text = _CONTROL.sub("", text)
    if limit is not None and len(text) > limit:
        text = text[:limit] + " [...]"
    return text


def csv_cell(text: str) -> str:
    """A one-line cell a spreadsheet shows as text, never evaluates."""
    text = printable(text)
    return "'" + text if text.startswith(FORMULA_STARTS) else text
