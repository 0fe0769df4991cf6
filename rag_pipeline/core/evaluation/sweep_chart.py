"""The refusal sweep as a PNG line chart, drawn with Pillow: the report page and the evaluation
asset's metadata embed it.

Pillow, not matplotlib: importing matplotlib and drawing this one chart took about 1 s of every
evaluation run (1.4 s on an AVX2 machine), longer than the sweep it shows; Pillow draws it in
about 0.1 s (0.17 s with Pillow's import). The chart is drawn at twice its size and scaled
down, so lines are smooth.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

from rag_pipeline.core.evaluation.gate_sweep import SweepRow

__all__ = ["CHART_SIZE", "SERIES", "sweep_chart_png", "y_ticks"]

CHART_SIZE = (700, 400)
"""Width and height in pixels."""
SERIES = (("in-domain: correct", "in_correct", (31, 119, 180)),
          ("in-domain: wrong", "in_wrong", (255, 127, 14)),
          ("in-domain: refused", "in_refused", (44, 160, 44)),
          ("out-of-domain: bluffs", "ood_bluffs", (214, 39, 40)))
"""Label, :class:`SweepRow` field and colour of each line."""
CUT_COLOUR = (128, 128, 128)
_SCALE = 2
_MARGIN = (64, 40, 20, 56)
"""Left, top, right, bottom, in chart pixels."""


def y_ticks(top: int) -> list[int]:
    """Ticks from 0 to at least ``top``, 1, 2 or 5 times a power of ten apart, at most eight
    past 0."""
    top = max(top, 1)
    step = 1
    while math.ceil(top / step) > 8:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2  # 1, 2, 5, 10, 20, 50, ...
    return list(range(0, step * math.ceil(top / step) + 1, step))


def _legend_places(plot: tuple[float, float, float, float], width: float, height: float,
                   pad: float) -> list[tuple[float, float, float, float]]:
    """Where the legend may go, in order of preference: the plot's right side (top, middle,
    bottom), then its left side; the chart puts it where it covers the fewest points."""
    middle = (plot[1] + plot[3] - height) / 2
    places = []
    for x in (plot[2] - pad - width, plot[0] + pad):
        for y in (plot[1] + pad, middle, plot[3] - pad - height):
            places.append((x, y, x + width, y + height))
    return places


def sweep_chart_png(sweep: Sequence[SweepRow], recommended_cut: float | None, title: str) -> bytes:
    """The sweep's four counts per cut as lines with markers, the recommended cut as a dashed
    vertical line, a legend where it hides the fewest points, the title and both axes'
    labels."""
    from PIL import Image, ImageDraw, ImageFont

    width, height = (side * _SCALE for side in CHART_SIZE)
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=11 * _SCALE)
    title_font = ImageFont.load_default(size=13 * _SCALE)
    left, top, right, bottom = (m * _SCALE for m in _MARGIN)
    plot = (left, top, width - right, height - bottom)
    cuts = [row.cut for row in sweep]
    low, high = (min(cuts), max(cuts)) if cuts else (0.0, 1.0)
    if high == low:
        low, high = low - 0.05, high + 0.05
    ticks = y_ticks(max((getattr(row, field) for row in sweep for _, field, _ in SERIES),
                        default=1))

    def x_at(cut: float) -> float:
        return plot[0] + (cut - low) / (high - low) * (plot[2] - plot[0])

    def y_at(count: float) -> float:
        return plot[3] - count / ticks[-1] * (plot[3] - plot[1])

    grid = (225, 225, 225)
    for tick in ticks:
        y = y_at(tick)
        draw.line([(plot[0], y), (plot[2], y)], fill=grid, width=_SCALE)
        draw.text((plot[0] - 6 * _SCALE, y), str(tick), fill="black", font=font, anchor="rm")
    for i, cut in enumerate(cuts):
        x = x_at(cut)
        draw.line([(x, plot[1]), (x, plot[3])], fill=grid, width=_SCALE)
        if i % 2 == 0 or len(cuts) <= 7:
            draw.text((x, plot[3] + 6 * _SCALE), f"{cut:g}", fill="black", font=font, anchor="mt")
    draw.rectangle(plot, outline="black", width=_SCALE)
    show_cut = recommended_cut is not None and low <= recommended_cut <= high
    if show_cut:
        x = x_at(recommended_cut)
        y = plot[1]
        while y < plot[3]:
            draw.line([(x, y), (x, min(y + 8 * _SCALE, plot[3]))], fill=CUT_COLOUR,
                      width=2 * _SCALE)
            y += 14 * _SCALE
    lines = {field: [(x_at(row.cut), y_at(getattr(row, field))) for row in sweep]
             for _, field, _ in SERIES}
    for _, field, colour in SERIES:
        points = lines[field]
        if len(points) > 1:
            draw.line(points, fill=colour, width=2 * _SCALE, joint="curve")
        for x, y in points:
            r = 3 * _SCALE
            draw.ellipse((x - r, y - r, x + r, y + r), fill=colour)
    entries = [(label, colour) for label, _, colour in SERIES]
    if show_cut:
        entries.append((f"recommended cut {recommended_cut:g}", CUT_COLOUR))
    line_height = 15 * _SCALE
    box_width = max(draw.textlength(label, font=font) for label, _ in entries) + 34 * _SCALE
    box_height = 8 * _SCALE + line_height * len(entries)
    near = 12 * _SCALE  # a point this close to the box counts as hidden: its line runs under it
    points = [point for line in lines.values() for point in line]
    box = min(_legend_places(plot, box_width, box_height, 8 * _SCALE),
              key=lambda place: sum(place[0] - near <= x <= place[2] + near
                                    and place[1] - near <= y <= place[3] + near
                                    for x, y in points))
    draw.rectangle(box, fill="white", outline=(200, 200, 200), width=_SCALE)
    for i, (label, colour) in enumerate(entries):
        y = box[1] + 4 * _SCALE + line_height * i + line_height / 2
        draw.line([(box[0] + 6 * _SCALE, y), (box[0] + 24 * _SCALE, y)], fill=colour,
                  width=2 * _SCALE)
        draw.text((box[0] + 30 * _SCALE, y), label, fill="black", font=font, anchor="lm")
    draw.text((width / 2, top / 2), title, fill="black", font=title_font, anchor="mm")
    draw.text(((plot[0] + plot[2]) / 2, height - 12 * _SCALE),
              "cosine-distance cut (keep at most 4 chunks under it)", fill="black", font=font,
              anchor="md")
    label = "queries"
    label_box = font.getbbox(label)
    turned = Image.new("RGB", (label_box[2] + 4, label_box[3] + 4), "white")
    ImageDraw.Draw(turned).text((2, 2), label, fill="black", font=font)
    turned = turned.rotate(90, expand=True)
    image.paste(turned, (8 * _SCALE, int((plot[1] + plot[3]) / 2 - turned.height / 2)))
    buffer = io.BytesIO()
    image.resize(CHART_SIZE, Image.Resampling.LANCZOS).save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()
