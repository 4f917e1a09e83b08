"""The class's pictures. summary.png: the score histogram and, per part, the share of graded submissions
with full marks. tests.png: the pass rate of every hidden test, grouped by part, the weakest first.

Drawn with Pillow (its built-in scalable font) rather than a plotting library: the grade command draws
them after the batch, so what they cost is the grader's wait; here a few milliseconds, where importing
matplotlib took a quarter of a second. Pillow itself is imported only to draw, and a gradebook of one
submission draws nothing (reports.CLASS_CHARTS_FROM).
"""
from __future__ import annotations

import io

SIZE = (1100, 400)
PANEL_TOP, PANEL_BOTTOM = 50, 340          # the plot areas' vertical extent, in pixels
HISTOGRAM_X = (70, 480)                     # the left panel's plot area
BARS_X = (720, 1070)                        # the right panel's plot area (part names to its left)
BIN_WIDTH = 5                               # score points per histogram bin; 100 falls in the last bin
INK, GRID, SCORES_COLOUR, PARTS_COLOUR = "#222222", "#E2E2E2", "#4C72B0", "#55A868"
FAST_PNG = 1   # zlib level: a report picture, not an archive (level 6 took 40 ms of tests.png, for 3% less)


def histogram(scores: list[float]) -> list[int]:
    """Counts per bin of BIN_WIDTH points, [0, 5), [5, 10), ..., [95, 100]."""
    bins = 100 // BIN_WIDTH
    counts = [0] * bins
    for score in scores:
        counts[min(bins - 1, max(0, int(score // BIN_WIDTH)))] += 1
    return counts


def count_ticks(top: int) -> list[int]:
    """Whole-number ticks from 0 to at least top: at most six, at a step of 1, 2 or 5 times a power of ten."""
    top, step = max(top, 1), 1
    while -(-top // step) > 5:
        lead, zeros = int(str(step)[0]), len(str(step)) - 1
        step = {1: 2, 2: 5, 5: 10}[lead] * 10 ** zeros
    return list(range(0, -(-top // step) * step + 1, step))


def draw(scores: list[float], score_title: str, part_rates: list[tuple[str, float]], parts_title: str) -> bytes:
    """The chart as PNG bytes: scores (0 to 100) and (part name, percent with full marks) pairs."""
    image, canvas, font, title_font = _canvas(SIZE, 13)
    _histogram_panel(canvas, font, title_font, histogram(scores), score_title)
    _parts_panel(canvas, font, title_font, part_rates, parts_title)
    return _png(image)


def _canvas(size: tuple[int, int], label_size: int):
    """(image, its drawing surface, the labels' font, the title's font): a white picture of size."""
    from PIL import Image, ImageDraw, ImageFont  # only when a picture is drawn (see the module's note)

    image = Image.new("RGB", size, "white")
    return image, ImageDraw.Draw(image), ImageFont.load_default(size=label_size), ImageFont.load_default(size=16)


def _png(image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=FAST_PNG)
    return buffer.getvalue()


def _frame(canvas, font, title_font, x_range: tuple[int, int], x_label: str, title: str, *, grid: bool) -> None:
    """A panel's axes, drawn before its data: 0 to 100 along x (grid lines up the panel, or tick marks below
    it), its labels and title. Data stays off the axis lines (x > left, y < PANEL_BOTTOM)."""
    left, right = x_range
    for value in range(0, 101, 20):
        x = left + (right - left) * value / 100
        canvas.line([(x, PANEL_TOP if grid else PANEL_BOTTOM), (x, PANEL_BOTTOM + (0 if grid else 4))],
                    fill=GRID if grid else INK)
        canvas.text((x, PANEL_BOTTOM + 7), str(value), font=font, fill=INK, anchor="mt")
    canvas.line([(left, PANEL_BOTTOM), (right, PANEL_BOTTOM)], fill=INK)
    canvas.line([(left, PANEL_TOP), (left, PANEL_BOTTOM)], fill=INK)
    canvas.text(((left + right) / 2, PANEL_BOTTOM + 28), x_label, font=font, fill=INK, anchor="mt")
    canvas.text(((left + right) / 2, PANEL_TOP - 22), title, font=title_font, fill=INK, anchor="mb")


def _histogram_panel(canvas, font, title_font, counts: list[int], title: str) -> None:
    left, right = HISTOGRAM_X
    ticks = count_ticks(max(counts))
    top_count = ticks[-1] or 1

    def y(count: float) -> float:
        return PANEL_BOTTOM - (PANEL_BOTTOM - PANEL_TOP) * count / top_count

    _frame(canvas, font, title_font, HISTOGRAM_X, "score", title, grid=False)
    for tick in ticks[1:]:   # horizontal grid and count labels
        canvas.line([(left + 1, y(tick)), (right, y(tick))], fill=GRID)
    for tick in ticks:
        canvas.text((left - 8, y(tick)), str(tick), font=font, fill=INK, anchor="rm")
    width = (right - left) / len(counts)
    for index, count in enumerate(counts):
        if count:
            canvas.rectangle([left + index * width + 1, y(count), left + (index + 1) * width - 1, PANEL_BOTTOM - 1],
                             fill=SCORES_COLOUR)
    canvas.text((left - 40, PANEL_TOP - 8), "submissions", font=font, fill=INK, anchor="lb")


def _parts_panel(canvas, font, title_font, rates: list[tuple[str, float]], title: str) -> None:
    left, right = BARS_X
    row = (PANEL_BOTTOM - PANEL_TOP) / max(1, len(rates))
    _frame(canvas, font, title_font, BARS_X, "% of graded submissions", title, grid=True)
    for index, (name, percent) in enumerate(rates):
        middle = PANEL_TOP + row * (index + 0.5)
        length = (right - left) * max(0.0, min(100.0, percent)) / 100
        if length:
            canvas.rectangle([left + 1, middle - row * 0.35, left + length, middle + row * 0.35], fill=PARTS_COLOUR)
        canvas.text((left - 8, middle), name, font=font, fill=INK, anchor="rm")
        shown = f"{percent:.0f}%"
        inside = length > 45
        canvas.text((left + length + (-6 if inside else 6), middle), shown, font=font,
                    fill="white" if inside else INK, anchor="rm" if inside else "lm")


TEST_ROW, TEST_LABELS, TEST_BARS = 18, 330, (350, 1040)   # pixels per test, label column, the bars' extent
PART_COLOURS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C")


def draw_tests(bars: list[tuple[int, str, float, int]], title: str) -> bytes:
    """tests.png as PNG bytes: one bar per (part, test function, pass rate in percent, submissions)."""
    top = 60
    height = top + TEST_ROW * max(1, len(bars)) + 50
    image, canvas, font, title_font = _canvas((SIZE[0], height), 12)
    left, right = TEST_BARS
    bottom = top + TEST_ROW * len(bars)
    canvas.text((SIZE[0] / 2, 12), title, font=title_font, fill=INK, anchor="mt")
    for value in range(0, 101, 20):
        x = left + (right - left) * value / 100
        canvas.line([(x, top), (x, bottom)], fill=GRID)
        canvas.text((x, bottom + 6), f"{value}%", font=font, fill=INK, anchor="mt")
    canvas.text(((left + right) / 2, bottom + 24), "submissions that passed (all of a test's cases together)",
                font=font, fill=INK, anchor="mt")
    for index, (part, function, rate, graded) in enumerate(bars):
        middle = top + TEST_ROW * (index + 0.5)
        length = (right - left) * max(0.0, min(100.0, rate)) / 100
        colour = PART_COLOURS[(part - 1) % len(PART_COLOURS)]
        if length:
            canvas.rectangle([left + 1, middle - TEST_ROW * 0.35, left + length, middle + TEST_ROW * 0.35], fill=colour)
        label = f"Part {part}  {function.removeprefix('test_')}"
        canvas.text((TEST_LABELS, middle), label if len(label) <= 52 else label[:51] + "…", font=font,
                    fill=INK, anchor="rm")
        canvas.text((left + length + 5, middle), f"{rate:.0f}% of {graded}", font=font, fill=INK, anchor="lm")
    canvas.line([(left, top), (left, bottom)], fill=INK)
    return _png(image)
