"""The class's pictures, drawn with matplotlib (Agg: no display needed). summary.png: the score histogram and, per
part, the share of graded submissions with full marks. tests.png: the pass rate of every hidden test, grouped by
part, the weakest first.

    summary_figure(scores, score_title, part_rates, parts_title)   the figure (what the tests read)
    draw(...)                                                       the same, as PNG bytes
    tests_figure(bars, title) / draw_tests(bars, title)             tests.png's
    write(out, name, draw, *data)                                   out/name = draw(*data), unless drawn already

matplotlib is imported only to draw: the grade command draws after the batch, and a gradebook of one submission
draws nothing (reports.CLASS_CHARTS_FROM).
"""
from __future__ import annotations

import hashlib
import io
import json
import pathlib

from grader.run.files import atomic_write

SIZE = (11.0, 4.0)                          # inches of summary.png (at DPI: 1100 x 400 pixels)
DPI = 100
BIN_WIDTH = 5                               # score points per histogram bin; 100 falls in the last bin
SCORES_COLOUR, PARTS_COLOUR = "#4C72B0", "#55A868"
PART_COLOURS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C")
TEST_ROW_INCHES = 0.18                      # tests.png grows with the number of tests
LABEL_CHARS = 52                            # a test's label beyond this is cut with an ellipsis
DRAWN_FROM = "pictures.json"                # what each picture in the output folder was drawn from


def histogram(scores: list[float]) -> list[int]:
    """Counts per bin of BIN_WIDTH points, [0, 5), [5, 10), ..., [95, 100]."""
    bins = 100 // BIN_WIDTH
    counts = [0] * bins
    for score in scores:
        counts[min(bins - 1, max(0, int(score // BIN_WIDTH)))] += 1
    return counts


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot
    return pyplot


def summary_figure(scores: list[float], score_title: str, part_rates: list[tuple[str, float]], parts_title: str):
    """summary.png's figure: the histogram of scores (0 to 100) on the left, (part name, percent with full marks)
    as bars on the right, the first part on top."""
    from matplotlib.ticker import MaxNLocator

    figure, (scores_axes, parts_axes) = _pyplot().subplots(1, 2, figsize=SIZE, dpi=DPI,
                                                           gridspec_kw={"width_ratios": (1, 1)})
    counts = histogram(scores)
    scores_axes.bar([index * BIN_WIDTH for index in range(len(counts))], counts, width=BIN_WIDTH, align="edge",
                    color=SCORES_COLOUR, edgecolor="white")
    scores_axes.set(xlim=(0, 100), xlabel="score", ylabel="submissions", title=score_title)
    scores_axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    names = [name for name, _ in part_rates]
    rates = [max(0.0, min(100.0, rate)) for _, rate in part_rates]
    bars = parts_axes.barh(range(len(rates)), rates, color=PARTS_COLOUR)
    parts_axes.bar_label(bars, labels=[f"{rate:.0f}%" for rate in rates], padding=3)
    parts_axes.set(xlim=(0, 100), yticks=range(len(names)), yticklabels=names, xlabel="% of graded submissions",
                   title=parts_title)
    parts_axes.invert_yaxis()
    figure.tight_layout()
    return figure


def tests_figure(bars: list[tuple[int, str, float, int]], title: str):
    """tests.png's figure: one bar per (part, test function, pass rate in percent, submissions), coloured by
    part, in the order given."""
    height = max(2.0, 1.1 + TEST_ROW_INCHES * len(bars))
    figure, axes = _pyplot().subplots(figsize=(SIZE[0], height), dpi=DPI)
    rates = [max(0.0, min(100.0, rate)) for _, _, rate, _ in bars]
    drawn = axes.barh(range(len(bars)), rates, color=[PART_COLOURS[(part - 1) % len(PART_COLOURS)]
                                                      for part, *_ in bars])
    # A bar is a pass rate over every case on every submission, not a count of submissions: its label says both.
    axes.bar_label(drawn, labels=[f"{rate:.0f}% ({graded} submissions)" for _, _, rate, graded in bars], padding=3,
                   fontsize=8)
    labels = [f"Part {part}  {function.removeprefix('test_')}" for part, function, _, _ in bars]
    axes.set_yticks(range(len(bars)), [label if len(label) <= LABEL_CHARS else label[:LABEL_CHARS - 1] + "…"
                                       for label in labels], fontsize=8)
    axes.set(xlim=(0, 100), title=title,
             xlabel="pass rate: % of the test's cases passed, on every submission with test results")
    axes.set_ylim(len(bars) - 0.5, -0.5)   # the first bar on top, with no empty band of margin above it
    figure.tight_layout()
    return figure


def png(figure) -> bytes:
    """The figure as PNG bytes; the figure is closed (pyplot keeps every open one)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    _pyplot().close(figure)
    return buffer.getvalue()


def draw(scores: list[float], score_title: str, part_rates: list[tuple[str, float]], parts_title: str) -> bytes:
    return png(summary_figure(scores, score_title, part_rates, parts_title))


def draw_tests(bars: list[tuple[int, str, float, int]], title: str) -> bytes:
    return png(tests_figure(bars, title))


def write(out: pathlib.Path, name: str, draw, *data) -> None:
    """out/name = draw(*data), PNG bytes, unless out/ holds that picture drawn from the same data by this same code
    (DRAWN_FROM keeps a digest of both): a resume that grades nothing draws nothing, nor imports matplotlib (most
    of such a run's CPU time)."""
    key = hashlib.sha256(json.dumps([data, pathlib.Path(__file__).read_text()]).encode()).hexdigest()
    try:
        keys = json.loads((out / DRAWN_FROM).read_text())
    except (OSError, ValueError):
        keys = {}
    keys = keys if isinstance(keys, dict) else {}
    if keys.get(name) == key and (out / name).is_file():
        return
    atomic_write(out / name, draw(*data))
    atomic_write(out / DRAWN_FROM, json.dumps({**keys, name: key}))
