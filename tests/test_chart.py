"""The class's pictures (autograder/reports/chart.py): what they count, read from the figures matplotlib draws, and
that they come out as PNG."""
from __future__ import annotations

import io

from PIL import Image

from autograder.reports import chart


def test_scores_fall_in_five_point_bins_and_100_in_the_last():
    counts = chart.histogram([0, 4.99, 5, 50, 94.99, 95, 100, 100])
    assert len(counts) == 20
    assert (counts[0], counts[1], counts[10], counts[18], counts[19]) == (2, 1, 1, 1, 3)
    assert sum(counts) == 8


def bars(axes) -> list[tuple[float, float, float, float]]:
    """(left, bottom, width, height) of each bar drawn on the axes."""
    return [(patch.get_x(), patch.get_y(), patch.get_width(), patch.get_height()) for patch in axes.patches]


def test_a_full_score_draws_its_bar_over_the_last_bin_only():
    figure = chart.summary_figure([100.0, 100.0, 37.0], "Scores", [("1. Scaling", 100.0)], "Full marks per part")
    scores_axes = figure.axes[0]
    drawn = {left: height for left, _, _, height in bars(scores_axes)}
    assert drawn[95] == 2 and drawn[35] == 1 and sum(drawn.values()) == 3
    assert [tick for tick in scores_axes.get_yticks() if tick == int(tick)] == list(scores_axes.get_yticks())


def test_a_parts_bar_is_as_long_as_its_share_of_full_marks_first_part_on_top():
    figure = chart.summary_figure([50.0, 100.0], "Scores", [("1. Scaling", 50.0), ("2. Masking", 0.0),
                                                            ("3. Heads", 130.0)], "Full marks per part")
    parts_axes = figure.axes[1]
    assert [width for _, _, width, _ in bars(parts_axes)] == [50.0, 0.0, 100.0]   # a share above 100 is cut
    assert [label.get_text() for label in parts_axes.get_yticklabels()] == ["1. Scaling", "2. Masking", "3. Heads"]
    assert parts_axes.yaxis_inverted()


def test_tests_png_has_a_bar_per_test_coloured_by_part_and_labels_cut_to_fit():
    long = "test_" + "x" * 80
    figure = chart.tests_figure([(1, "test_scaled", 25.0, 4), (2, long, 100.0, 4)], "Pass rate")
    axes = figure.axes[0]
    assert [width for _, _, width, _ in bars(axes)] == [25.0, 100.0]
    colours = [patch.get_facecolor()[:3] for patch in axes.patches]
    assert colours[0] != colours[1]
    labels = [label.get_text() for label in axes.get_yticklabels()]
    assert labels[0] == "Part 1  scaled" and labels[1].endswith("…") and len(labels[1]) == chart.LABEL_CHARS
    # Issue 49: "25% of 4" under "submissions that passed" read as a count; and a band of margin above the first bar
    assert [text.get_text() for text in axes.texts] == ["25% (4 submissions)", "100% (4 submissions)"]
    assert "pass rate" in axes.get_xlabel() and axes.get_ylim() == (1.5, -0.5)


def test_the_pictures_are_pngs_of_the_size_said():
    png = chart.draw([10.0, 90.0], "Scores", [("1. Scaling", 50.0)], "Full marks per part")
    with Image.open(io.BytesIO(png)) as image:
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and image.size == (1100, 400)
    assert chart.draw_tests([(1, "test_a", 50.0, 2)], "Pass rate")[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_picture_is_drawn_again_only_when_what_it_shows_changed(tmp_path):
    """Issue 49: a resume that grades nothing spent most of its CPU time redrawing the same pictures."""
    calls = []

    def draw(*data):
        calls.append(data)
        return b"png"

    for scores in ([1.0], [1.0], [2.0]):
        chart.write(tmp_path, "x.png", draw, scores, "title")
    assert calls == [([1.0], "title"), ([2.0], "title")]
    (tmp_path / "x.png").unlink()   # gone since: drawn again
    chart.write(tmp_path, "x.png", draw, [2.0], "title")
    assert len(calls) == 3 and (tmp_path / "x.png").read_bytes() == b"png"
