"""Markdown: the file as it is, minus YAML front matter; sections at ATX headings outside code.

The heading lines found here are the only Markdown structure in the project: extraction takes
a document's title and sections from them and the gold-set check keeps needles out of them.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from rag_pipeline.core.ingest.extracted import Extracted, Extractor
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.reading import decode_utf8

_HEADING = re.compile(r"^(#{1,6})[ \t]+([^\n]*)$", re.MULTILINE)
_FENCE = re.compile(r"^(`{3,}|~{3,})[^\n]*\n.*?(?:^\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)


def heading_spans(text: str) -> list[tuple[int, int, int, str]]:
    """``(start, end, level, title)`` of each ATX heading line, end excluding the newline.
    Lines inside fenced code blocks (``` or ~~~) are code, never headings."""
    fences = [(m.start(), m.end()) for m in _FENCE.finditer(text)]
    fence_starts = [start for start, _ in fences]
    spans = []
    for m in _HEADING.finditer(text):
        # Fences never overlap, so only the last fence starting at or before the heading can hold it.
        i = bisect_right(fence_starts, m.start()) - 1
        if i >= 0 and m.start() < fences[i][1]:
            continue
        spans.append((m.start(), m.end(), len(m.group(1)), _heading_title(m.group(2))))
    return spans


def _heading_title(rest: str) -> str:
    """The text after the opening hashes, without an optional closing run of ``#`` (which
    needs white space before it: ``## C#`` is titled ``C#``). Done with string operations: the
    regex that did it backtracked quadratically on long runs of spaces and tabs."""
    title = rest.rstrip(" \t")
    unclosed = title.rstrip("#")
    if unclosed != title and unclosed[-1:] in (" ", "\t"):
        title = unclosed
    return title.strip()


def first_title(text: str) -> str | None:
    """The first level-1 ATX heading outside fenced code, if any."""
    return next((title for _, _, level, title in heading_spans(text) if level == 1 and title), None)


def without_headings(text: str) -> str:
    """The text with each heading line replaced by one space (fenced code kept as it is)."""
    parts, last = [], 0
    for start, end, _, _ in heading_spans(text):
        parts += [text[last:start], " "]
        last = end
    return "".join(parts) + text[last:]


_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*\n", re.DOTALL)


class MarkdownFormat(DocumentFormat):
    """``.md`` and ``.markdown`` files."""

    name = "markdown"
    suffixes = (".md", ".markdown")

    def extractor(self) -> Extractor:
        return Extractor("markdown-frontmatter", "1")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """Markdown as it is, minus YAML front matter; title from the first ``# `` heading,
        then the front matter's ``title:``, then the stem."""
        text = decode_utf8(data)
        front_title = None
        match = _FRONT_MATTER.match(text)
        if match:
            for line in match.group(1).splitlines():
                key, _, value = line.partition(":")
                if key.strip().lower() == "title" and value.strip():
                    front_title = value.strip().strip("'\"")
            text = text[match.end() :]
        title = first_title(text) or front_title or stem
        return Extracted(title=title, canonical_text=text)
