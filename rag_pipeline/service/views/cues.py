"""A transcript citation (WebVTT, SRT) as its cues with their times, the cited cues marked."""

from __future__ import annotations

import html

from rag_pipeline.service.views.base import View, ViewRequest


def clock(seconds: float) -> str:
    """``1:02:03.5`` / ``02:03.5``: a time as a player shows it (tenths kept when not zero)."""
    whole, tenths = divmod(round(seconds * 10), 10)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"
    return f"{text}.{tenths}" if tenths else text


def _times(locator: str) -> tuple[float, float]:
    first, _, last = locator.removeprefix("t=").partition(",")
    return float(first), float(last)


def cues_view(request: ViewRequest) -> View:
    """One row per cue: its start and end, its text; the cues the quote overlaps marked."""
    rows = []
    cited: list[tuple[float, float]] = []
    for anchor in request.info.anchors:
        if not anchor.locator.startswith("t="):
            continue
        start, end = _times(anchor.locator)
        hit = anchor.start < request.end and anchor.end > request.start
        attributes = ""
        if hit:
            attributes = ' class="cited" id="quote"' if not cited else ' class="cited"'
            cited.append((start, end))
        rows.append(f'<tr{attributes}><td class="time">{clock(start)} &ndash; {clock(end)}</td>'
                    f"<td>{html.escape(request.text[anchor.start:anchor.end])}</td></tr>")
    label = f"{clock(cited[0][0])} to {clock(cited[-1][1])}" if cited else "the transcript"
    return View(label, f'<table class="cues"><tbody>{"".join(rows)}</tbody></table>', "cues")
