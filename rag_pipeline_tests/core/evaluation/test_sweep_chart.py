import io

from PIL import Image, ImageChops

from rag_pipeline.core.evaluation.gate_sweep import SweepRow
from rag_pipeline.core.evaluation.sweep_chart import CHART_SIZE, SERIES, sweep_chart_png, y_ticks


def _row(cut: float, correct: int, wrong: int, refused: int, bluffs: int) -> SweepRow:
    return SweepRow(cut, correct, wrong, refused, bluffs, bluffs, 0, 60)


SWEEP = [_row(0.45, 148, 39, 57, 3), _row(0.5, 164, 46, 34, 5), _row(0.55, 181, 50, 13, 7),
         _row(0.6, 193, 47, 4, 12), _row(0.65, 198, 45, 1, 19), _row(0.7, 198, 46, 0, 25)]


def test_y_ticks_are_one_two_or_five_times_a_power_of_ten_apart():
    assert y_ticks(198) == [0, 50, 100, 150, 200]
    assert y_ticks(8) == [0, 1, 2, 3, 4, 5, 6, 7, 8]
    assert y_ticks(9) == [0, 2, 4, 6, 8, 10]
    assert y_ticks(17) == [0, 5, 10, 15, 20]
    assert y_ticks(0) == [0, 1]


def _colours(png: bytes) -> tuple[tuple[int, int], set[tuple[int, int, int]]]:
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    return image.size, {colour for _, colour in image.convert("RGB").getcolors(1 << 20)}


def test_the_chart_is_a_png_with_every_line():
    size, colours = _colours(sweep_chart_png(SWEEP, 0.6, "Refusal sweep, header x hybrid, m@1"))
    assert size == CHART_SIZE
    assert {colour for _, _, colour in SERIES} <= colours


def _tallest_changed_column(a: bytes, b: bytes) -> int:
    changed = ImageChops.difference(Image.open(io.BytesIO(a)).convert("L"),
                                    Image.open(io.BytesIO(b)).convert("L")).point(
        lambda v: 255 if v > 24 else 0)
    width, height = changed.size
    pixels = changed.load()
    return max(sum(pixels[x, y] > 0 for y in range(height)) for x in range(width))


def test_the_recommended_cut_is_a_dashed_line_across_the_plot():
    with_cut = sweep_chart_png(SWEEP, 0.6, "t")
    # The dashes cover 8 of every 14 pixels of the plot's 304-pixel height; the legend entry
    # the cut adds changes a box only 83 pixels high.
    assert _tallest_changed_column(with_cut, sweep_chart_png(SWEEP, None, "t")) >= 150
    assert _tallest_changed_column(with_cut, sweep_chart_png(SWEEP, 0.6, "t")) == 0


def test_an_empty_sweep_still_draws():
    size, colours = _colours(sweep_chart_png([], None, "empty"))
    assert size == CHART_SIZE
    assert not {colour for _, _, colour in SERIES} & colours
