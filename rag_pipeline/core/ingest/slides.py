"""A deck's slides as text: what PPTX and ODP share.

A slide is its title line (``Slide N`` without one) outside every section, then its blocks
separated by blank lines (a section titled by the slide); a slide of a title alone (a section
divider, a closing "Questions?") is a section of that title, so its words are in a chunk and
can be found and quoted; each slide, title included, is one
anchor ``slide=N``, cited ``#slide=N`` (``#slide=N-M`` over several:
:func:`~rag_pipeline.core.ingest.anchor_spans.unit_fragment`); a table block is declared as a
:class:`~rag_pipeline.core.ingest.extracted.TableSpan`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from rag_pipeline.core.ingest.extracted import Anchor, Section, TableSpan
from rag_pipeline.core.ingest.tables import layout_table

__all__ = ["HIDDEN", "MAX_SLIDES", "Block", "lay_out_slides"]

MAX_SLIDES = 2000
"""A deck with more slides fails unread: the longest real decks have a few hundred."""


Block = tuple[str, list[list[str]] | None]
"""A slide's block: its text, and a table's rows (``None`` for a text frame or the notes)."""


HIDDEN = " (hidden slide)"
"""What a hidden slide's section title ends with: a citation's label says the slide was never
shown (a draft, a backup), as a hidden sheet's tab says ``(hidden)``."""


def lay_out_slides(slides: Sequence[tuple[int, str, Sequence[Block]]],
                   hidden: Collection[int] = ()) -> tuple[
        str, tuple[Section, ...], tuple[Anchor, ...], tuple[TableSpan, ...]]:
    """The canonical text of ``(number, title, blocks)`` slides, with a section per slide body
    (titled by the slide's title, :data:`HIDDEN` after it for a slide numbered in ``hidden``),
    an anchor ``slide=N`` per slide and a :class:`TableSpan` per table block. A slide without
    blocks and without a title of its own is left out."""
    parts: list[str] = []
    sections: list[Section] = []
    anchors: list[Anchor] = []
    tables: list[TableSpan] = []
    offset = 0
    for number, title, blocks in slides:
        if not blocks and title == f"Slide {number}":
            continue
        start = offset
        body = "\n\n".join(text for text, _ in blocks)
        text = f"{title}\n\n{body}\n\n" if body else f"{title}\n\n"
        label = f"{title}{HIDDEN}" if number in hidden else title
        if body:
            block_start = offset + len(title) + 2
            sections.append(Section(label, block_start, block_start + len(body)))
            for block_text, rows in blocks:
                if rows:
                    tables.append(layout_table(rows, block_start)[1])
                block_start += len(block_text) + 2
        else:
            sections.append(Section(label, start, start + len(title)))
        parts.append(text)
        offset += len(text)
        anchors.append(Anchor(start, offset - 2, f"slide={number}"))
    canonical = "".join(parts)[:-1] if parts else ""
    return canonical, tuple(sections), tuple(anchors), tuple(tables)
