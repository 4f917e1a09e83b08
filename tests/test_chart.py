"""summary.png (autograder/reports/chart.py): what it counts and where it draws it."""
from __future__ import annotations

import io

import pytest
from PIL import Image

from autograder.reports import chart


def test_scores_fall_in_five_point_bins_and_100_in_the_last():
    counts = chart.histogram([0, 4.99, 5, 50, 94.99, 95, 100, 100])
    assert len(counts) == 20
    assert (counts[0], counts[1], counts[10], counts[18], counts[19]) == (2, 1, 1, 1, 3)
    assert sum(counts) == 8


@pytest.mark.parametrize(("top", "ticks"), [
    (0, [0, 1]), (1, [0, 1]), (5, [0, 1, 2, 3, 4, 5]), (6, [0, 2, 4, 6]), (11, [0, 5, 10, 15]),
    (100, [0, 20, 40, 60, 80, 100]), (260, [0, 100, 200, 300]),
])
def test_count_ticks_are_whole_few_and_cover_the_top(top, ticks):
    assert chart.count_ticks(top) == ticks


def picture(scores, rates):
    png = chart.draw(scores, "Scores", rates, "Full marks per part")
    image = Image.open(io.BytesIO(png))
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and image.size == chart.SIZE
    return image.convert("RGB")


def coloured(image, colour: str, box) -> int:
    """Pixels of exactly this colour inside box (left, top, right, bottom)."""
    wanted = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return sum(pixel == wanted for pixel in image.crop(box).get_flattened_data())


def test_a_full_score_draws_its_bar_over_the_last_bin_only():
    image = picture([100.0], [("1. Scaling", 100.0)])
    left, right = chart.HISTOGRAM_X
    last_bin = (right - (right - left) // 20 + 2, chart.PANEL_TOP + 2, right - 2, chart.PANEL_BOTTOM - 2)
    assert coloured(image, chart.SCORES_COLOUR, last_bin) > 0
    assert coloured(image, chart.SCORES_COLOUR, (left, chart.PANEL_TOP, right - (right - left) // 20 - 2,
                                                 chart.PANEL_BOTTOM)) == 0


def test_a_parts_bar_is_as_long_as_its_share_of_full_marks():
    image = picture([50.0, 100.0], [("1. Scaling", 50.0), ("2. Masking", 0.0)])
    left, right = chart.BARS_X
    middle = left + (right - left) // 2
    first_row = (chart.PANEL_TOP, chart.PANEL_TOP + (chart.PANEL_BOTTOM - chart.PANEL_TOP) // 2)
    assert coloured(image, chart.PARTS_COLOUR, (left + 2, first_row[0], middle - 2, first_row[1])) > 0
    assert coloured(image, chart.PARTS_COLOUR, (middle + 2, first_row[0], right, first_row[1])) == 0
    second_row = (first_row[1], chart.PANEL_BOTTOM)
    assert coloured(image, chart.PARTS_COLOUR, (left, second_row[0], right, second_row[1])) == 0
