"""Page headers and footers of a word-processing document (DOCX, ODT): read once, at the end.

A header or footer repeats on every page, so each distinct text is one line, ``Header: text``
or ``Footer: text``, in a last section titled :data:`HEADERS_AND_FOOTERS`; one holding no
letter (a page number) says nothing and is left out.
"""

from __future__ import annotations

from collections.abc import Iterable

from rag_pipeline.core.ingest.extracted import Section

HEADERS_AND_FOOTERS = "Page headers and footers"


def furniture_lines(texts: Iterable[tuple[str, str]]) -> list[str]:
    """``Header: text`` lines of ``(kind, text)`` pairs (``kind`` ``header`` or ``footer``),
    white space collapsed, each distinct line once, in order; a text without a letter left out."""
    lines: list[str] = []
    for kind, text in texts:
        line = f"{kind.capitalize()}: {' '.join(text.split())}"
        if any(char.isalpha() for char in text) and line not in lines:
            lines.append(line)
    return lines


def with_furniture(canonical: str, lines: list[str]) -> tuple[str, Section | None]:
    """``canonical`` (empty, or ending with a line break) with ``lines`` after a blank line,
    and their section; unchanged, and None, without lines."""
    if not lines:
        return canonical, None
    start = len(canonical) + 1 if canonical else 0
    text = "\n".join(lines)
    joined = f"{canonical}\n{text}\n" if canonical else f"{text}\n"
    return joined, Section(HEADERS_AND_FOOTERS, start, start + len(text), 1)
