"""Sections from a document's headings, for every format whose text holds its heading lines
(Markdown, a notebook's Markdown cells, AsciiDoc, reStructuredText, man pages, HTML and an
EPUB's chapters).

A heading is ``(start, end, level, title)``: ``text[start:end]`` is its line, 1 the top level.
Its body runs from its end to the next heading's start, titled by it at its level. The text
before the first heading is titled by the document (an empty section when a heading opens
the text), and so is the body of the first level-1
heading when that heading is the document's title (``# Guide``, AsciiDoc's ``= Guide``); a later
level-1 heading titles its own body (a changelog's releases, each ``# Version 1.80.0``).

Blank bodies are kept: a heading with nothing under it over a deeper one still titles that one
(:func:`rag_pipeline.core.chunking.strategies.body_sections`: ``Install > Linux``).
"""

from __future__ import annotations

from collections.abc import Iterable

from rag_pipeline.core.ingest.extracted import Section

__all__ = ["heading_sections"]


def heading_sections(headings: Iterable[tuple[int, int, int, str]], end: int, document_title: str,
                     first_is_title: bool = True) -> tuple[Section, ...]:
    """The sections of a text of ``end`` characters under its ``headings`` (in text order), as
    the module says.
    ``first_is_title``: whether the first level-1 heading is the document's title (a manual
    page's ``NAME`` is not)."""
    sections: list[Section] = []
    title, level, start = document_title, 1, 0
    first = first_is_title
    for h_start, h_end, h_level, h_title in headings:
        sections.append(Section(title, start, h_start, level))
        title = document_title if h_level == 1 and first else h_title
        first = first and h_level != 1
        level, start = h_level, h_end
    sections.append(Section(title, start, end, level))
    return tuple(sections)
