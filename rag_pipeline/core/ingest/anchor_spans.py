"""Which anchors a span of canonical text overlaps: how a chunk finds the rows, cues, cells or
slides it cites."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from rag_pipeline.core.ingest.extracted import Anchor


def overlapping(anchors: Sequence[Anchor], start: int, end: int) -> Sequence[Anchor]:
    """The anchors sharing at least one character with ``[start, end)``, in order.

    ``anchors`` must be in text order and must not overlap each other (rows, cues and pages
    never do), so both their starts and their ends are sorted and two binary searches find
    the run. An empty span (``start == end``) overlaps the anchor holding ``start``.
    """
    if start == end:
        end = start + 1
    first = bisect_right(anchors, start, key=_end)
    last = bisect_left(anchors, end, key=_start)
    return anchors[first:last]


def _start(anchor: Anchor) -> int:
    return anchor.start


def _end(anchor: Anchor) -> int:
    return anchor.end


def unit_fragment(anchors: Sequence[Anchor], start: int, end: int) -> str:
    """The fragment naming the numbered units (``cell=N``, ``slide=N`` anchors, in order, not
    overlapping) that ``[start, end)`` covers: ``#cell=3`` within one, ``#cell=3-5`` over
    several; a span between units (their separating blank lines) names the unit before it;
    ``""`` without anchors."""
    if not anchors:
        return ""
    covered = overlapping(anchors, start, end) or [
        anchors[max(bisect_right(anchors, start, key=_start) - 1, 0)]]
    key, _, first = covered[0].locator.partition("=")
    last = covered[-1].locator.partition("=")[2]
    return f"#{key}={first}" if first == last else f"#{key}={first}-{last}"
