"""Cuts canonical document text into chunks, six ways, so the strategies can be compared.

Every chunk carries two texts. ``content`` is the chunk's own words, exactly
``canonical[start:end]``: it is what a citation quotes. ``text`` is what gets embedded: for the
``header`` strategies a ``[Title > Section]`` line first, for the ``overlap`` strategies the
previous chunk's last characters first. Spans come from positions found in the canonical text
(regex matches over it), never from adding up lengths, and :func:`offset_errors` checks them.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from rag_pipeline.core.ingest.extracted import Section, TableSpan
from rag_pipeline.core.ingest.tables import repeated_header


class ChunkingStrategy(StrEnum):
    """The six strategies of the design; ``header`` is the production default."""

    BLIND = "blind"
    BLIND_OVERLAP = "blind_overlap"
    BOUNDARIES = "boundaries"
    BOUNDARIES_OVERLAP = "boundaries_overlap"
    HEADER = "header"
    HEADER_OVERLAP = "header_overlap"

    @property
    def blind(self) -> bool:
        return self in (ChunkingStrategy.BLIND, ChunkingStrategy.BLIND_OVERLAP)

    @property
    def overlap(self) -> bool:
        return self.value.endswith("_overlap")

    @property
    def header(self) -> bool:
        return self in (ChunkingStrategy.HEADER, ChunkingStrategy.HEADER_OVERLAP)


DEFAULT_STRATEGY = ChunkingStrategy.HEADER


@dataclass(frozen=True)
class ChunkingSettings:
    """Sizes in characters.

    Attributes:
        target_chars: The size chunks are packed up to; only a single word longer than it makes
            a longer chunk.
        overlap_chars: The length of the previous chunk's tail that the overlap strategies prepend.
        max_chars: The hard maximum of a chunk's ``content``, whatever the text: a word longer
            than it (a line without any white space) is cut every ``max_chars`` characters.
            ``None`` means twice ``target_chars``.

    Raises:
        ValueError: If ``target_chars`` is not positive, ``overlap_chars`` is not in
            ``[0, target_chars)`` or ``max_chars`` is below ``target_chars``.
    """

    target_chars: int = 512
    overlap_chars: int = 64
    max_chars: int | None = None

    def __post_init__(self) -> None:
        if self.target_chars < 1:
            raise ValueError(f"target_chars must be positive, got {self.target_chars}")
        if not 0 <= self.overlap_chars < self.target_chars:
            raise ValueError(f"overlap_chars must be in [0, target_chars), got {self.overlap_chars}")
        if self.max_chars is not None and self.max_chars < self.target_chars:
            raise ValueError(f"max_chars must be >= target_chars ({self.target_chars}), "
                             f"got {self.max_chars}")

    @property
    def hard_max_chars(self) -> int:
        """No chunk's ``content`` is longer than this."""
        return self.max_chars if self.max_chars is not None else 2 * self.target_chars


@dataclass(frozen=True)
class Chunk:
    """One row of the ``chunks`` table (less the tokenizer columns added later)."""

    chunk_id: str
    document_id: str
    ordinal: int
    section: str
    header: str
    text: str
    content: str
    start: int
    end: int

    @property
    def content_sha256(self) -> str:
        return content_fingerprint(self.content)

    @property
    def text_sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def content_fingerprint(content: str) -> str:
    """sha256 of the content with white space collapsed, so a repeated passage is recognisable
    even where its indentation or line breaks differ."""
    return hashlib.sha256(" ".join(content.split()).encode("utf-8")).hexdigest()


_NON_BLANK_LINES = re.compile(r"(?:^[^\n]*\S[^\n]*(?:\n|\Z))+", re.MULTILINE)
# A match starts only where a run of [.!?] starts and never backtracks into it: a line of a
# million dots is one linear scan, not a million. A numbered list item's number (``7.`` at a
# line's start, up to three spaces in) is no sentence's end: cut there, a chunk ended with the
# next step's number and the step began without its own.
_LIST_NUMBER = "".join("(?<!^" + " " * spaces + r"\d" * digits + ")"
                       for spaces in range(4) for digits in range(1, 4))
_SENTENCE_END = re.compile(rf"(?<![.!?]){_LIST_NUMBER}[.!?]++[\"')\]’”]*+(?=\s)", re.MULTILINE)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_LINE_END = re.compile(r"\n")
_WORD_END = re.compile(r"\S(?=\s)")
_CELL_SEPARATOR = re.compile(r"[|\t]")
"""Between two cells of a table row as the formats write it: the ``|`` of `` | ``
(spreadsheets, slides, word-processor tables, Markdown's pipes; the blanks around it are
trimmed from the cells) or a tab (HTML)."""


def body_sections(canonical: str, document_title: str,
                  sections: Sequence[Section] = ()) -> list[Section]:
    """The sections chunks are cut from: the extractor's ``sections`` whose body holds a
    non-blank character, or with no sections the whole text as one section titled by the
    document. Text outside every section (a heading line) is in no chunk, so a heading with
    nothing under it over a deeper one ("## Install" over "### Linux") titles it with its own
    (``Install > Linux``): its words are in that section's chunks' header and label (but the
    document's title, which the header holds already)."""
    if not sections:
        sections = (Section(document_title, 0, len(canonical)),)
    kept: list[Section] = []
    over: list[Section] = []  # blank sections, each deeper than the one before, over the next
    for section in sections:
        if canonical[section.start:section.end].strip():
            titles = [s.title for s in over if s.level < section.level and s.title != document_title]
            kept.append(replace(section, title=" > ".join([*titles, section.title]))
                        if titles else section)
            over = []
        else:
            over = [*(s for s in over if s.level < section.level), section]
    return kept


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def paragraph_spans(canonical: str, start: int, end: int) -> list[tuple[int, int]]:
    """Runs of non-blank lines inside ``[start, end)``, trimmed of surrounding white space."""
    spans = []
    for match in _NON_BLANK_LINES.finditer(canonical, start, end):
        s, e = _trim(canonical, match.start(), match.end())
        if s < e:
            spans.append((s, e))
    return spans


def _split_at(canonical: str, start: int, end: int, boundary: re.Pattern[str]) -> list[tuple[int, int]]:
    pieces, piece_start = [], start
    for match in boundary.finditer(canonical, start, end):
        s, e = _trim(canonical, piece_start, match.end())
        if s < e:
            pieces.append((s, e))
        piece_start = match.end()
    s, e = _trim(canonical, piece_start, end)
    if s < e:
        pieces.append((s, e))
    return pieces


def _units(canonical: str, start: int, end: int, target: int, hard_max: int,
           levels: Sequence[re.Pattern[str]]) -> Iterator[tuple[int, int]]:
    """Pieces of ``[start, end)`` no longer than ``target``: split at the first boundary kind,
    and a piece still too long at the next (sentence, then line, then word). A single word
    over ``target`` stays whole up to ``hard_max``, and is cut every ``hard_max`` characters
    beyond it."""
    if end - start <= target:
        yield start, end
    elif levels:
        for s, e in _split_at(canonical, start, end, levels[0]):
            yield from _units(canonical, s, e, target, hard_max, levels[1:])
    else:
        for s in range(start, end, hard_max):
            yield s, min(s + hard_max, end)


def _cells(canonical: str, start: int, end: int, target: int, hard_max: int,
           levels: Sequence[re.Pattern[str]]) -> Iterator[tuple[int, int]]:
    """A wide row's cells, each with the :data:`_CELL_SEPARATOR` after it (so that every
    character is in a chunk), each cut like a paragraph when over ``target``: packed, a row is
    cut between cells, never between a column's name and its value (``column JT:`` |
    ``139``)."""
    cell_start = start
    for separator in [*_CELL_SEPARATOR.finditer(canonical, start, end), None]:
        cell_end = separator.end() if separator is not None else end
        s, e = _trim(canonical, cell_start, cell_end)
        if s < e:
            yield from _units(canonical, s, e, target, hard_max, levels)
        cell_start = cell_end


def _pack(units: Iterable[tuple[int, int]], target: int) -> Iterator[tuple[int, int]]:
    """Greedily joins consecutive spans while the joined span stays within ``target``."""
    current: tuple[int, int] | None = None
    for s, e in units:
        if current is None:
            current = (s, e)
        elif e - current[0] <= target:
            current = (current[0], e)
        else:
            yield current
            current = (s, e)
    if current is not None:
        yield current


def _pack_pieces(pieces: Iterable[tuple[int, int]], target: int) -> list[tuple[int, int]]:
    """The pieces of one paragraph (or one wide row) packed up to ``target``; when the last
    chunk is under ``target / TAIL_FRACTION``, the last two are cut again between pieces where
    the shorter of the two is longest, both still within ``target``: a tail of a few words
    ("day.") is no chunk a question finds, and a citation quoting it alone quotes nothing."""
    pieces = list(pieces)
    packed = list(_pack(pieces, target))
    if len(packed) < 2 or (packed[-1][1] - packed[-1][0]) * TAIL_FRACTION >= target:
        return packed
    (first, _), (_, last) = packed[-2], packed[-1]
    pair = [p for p in pieces if p[0] >= first]
    shortest, best = packed[-1][1] - packed[-1][0], None
    for cut in range(1, len(pair)):
        left, right = pair[cut - 1][1] - first, last - pair[cut][0]
        if left <= target and right <= target and min(left, right) > shortest:
            shortest, best = min(left, right), cut
    if best is not None:
        packed[-2:] = [(first, pair[best - 1][1]), (pair[best][0], last)]
    return packed


TAIL_FRACTION = 8
"""A paragraph's last chunk under ``target / TAIL_FRACTION`` characters (64 at the default 512)
takes pieces from the chunk before it."""


def boundary_spans(canonical: str, section: Section, target: int,
                   hard_max: int | None = None,
                   tables: Sequence[TableSpan] = ()) -> list[tuple[int, int]]:
    """Whole paragraphs packed up to ``target``; a paragraph over ``target`` is cut at sentence
    ends (then line ends, then word ends, then every ``hard_max`` characters, by default twice
    ``target``) and its pieces packed on their own.

    A table (of ``tables``) is cut between its rows, one row a chunk (the header row with the
    first; a wide row whole up to ``hard_max``, and beyond it cut between its cells: a row of 31
    columns cut at ``target`` would leave its last columns a chunk of their own, which no
    question about the row finds and a citation would quote as the row): a question about one row (a person's
    phone, a server's rack) is near that row's vector, and far from a chunk of several rows,
    whose vector blends them (docs/user-guide/tables-and-ocr.md has the figures)."""
    hard_max = hard_max if hard_max is not None else 2 * target
    spans: list[tuple[int, int]] = []
    small: list[tuple[int, int]] = []
    levels = (_SENTENCE_END, _LINE_END, _WORD_END)
    position = section.start
    for number, table in enumerate(tables):
        t_start, t_end = max(table.start, section.start), min(table.end, section.end)
        if t_end <= t_start:
            continue
        small, position = _paragraphs(canonical, position, t_start, target, hard_max, spans,
                                      small)
        spans.extend(_pack(small, target))
        small = []
        rows = [_trim(canonical, r_start, r_end) for r_start, r_end in table_rows(table, t_start, t_end)]
        rows = [(s, e) for s, e in rows if s < e]
        position = t_end
        following = min(section.end, tables[number + 1].start) if number + 1 < len(tables) \
            else section.end  # tables are in order and never overlap
        run_on = _running_on(canonical, t_end, following)  # never into the next table
        if rows and run_on is not None and run_on[1] - rows[-1][0] <= target:
            # Text that goes on from the last row (a wrapped cell the reader left after the
            # table) stays in that row's chunk.
            rows[-1] = (rows[-1][0], run_on[1])
            position = run_on[1]
        for s, e in rows:
            if e - s <= hard_max:
                spans.append((s, e))
            else:
                spans.extend(_pack_pieces(_cells(canonical, s, e, target, hard_max, levels), target))
    small, _ = _paragraphs(canonical, position, section.end, target, hard_max, spans, small)
    spans.extend(_pack(small, target))
    return spans


RUN_ON_MAX_CHARS = 80
"""After a blank line, a paragraph goes on from a table's last row only when it is one line of
at most this many characters starting in lower case: the rest of a wrapped cell ("pipeline."),
not a paragraph that opens with a lower-case name ("sklearn.datasets.fetch_covtype will load
...", after a reStructuredText table)."""


def _running_on(canonical: str, start: int, end: int) -> tuple[int, int] | None:
    """The paragraph after ``start`` when it goes on from there: no blank line before it, or
    after one a single short line starting in lower case (:data:`RUN_ON_MAX_CHARS`: a
    sentence a page break or the layout cut); else None."""
    spans = paragraph_spans(canonical, start, end)
    if not spans:
        return None
    p_start, p_end = spans[0]
    if _BLANK_LINE.search(canonical, start, p_start) and not (
            canonical[p_start].islower() and p_end - p_start <= RUN_ON_MAX_CHARS
            and "\n" not in canonical[p_start:p_end]):
        return None
    return spans[0]


def table_rows(table: TableSpan, start: int, end: int) -> list[tuple[int, int]]:
    """The spans of ``table``'s rows within ``[start, end)``, the header row (when the span
    holds it) joined to the first row after it."""
    cuts = [row for row in table.rows if start < row < end]
    if cuts and start < table.header_end <= cuts[0]:
        cuts = cuts[1:]
    return list(zip([start, *cuts], [*cuts, end], strict=True))


def _paragraphs(canonical: str, start: int, end: int, target: int, hard_max: int,
                spans: list[tuple[int, int]],
                small: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], int]:
    """Adds the paragraphs of ``[start, end)`` to ``spans`` (those over ``target`` cut into
    pieces); returns the trailing run of small paragraphs still to be packed, and ``end``."""
    for p_start, p_end in paragraph_spans(canonical, start, end):
        if p_end - p_start <= target:
            small.append((p_start, p_end))
            continue
        spans.extend(_pack(small, target))
        small = []
        pieces = _units(canonical, p_start, p_end, target, hard_max,
                        (_SENTENCE_END, _LINE_END, _WORD_END))
        spans.extend(_pack_pieces(pieces, target))
    return small, end


def blind_spans(canonical: str, target: int) -> list[tuple[int, int]]:
    """Every ``target`` characters, wherever that falls (trimmed; blank windows dropped)."""
    spans = []
    for window_start in range(0, len(canonical), target):
        s, e = _trim(canonical, window_start, min(window_start + target, len(canonical)))
        if s < e:
            spans.append((s, e))
    return spans


def context_header(document_title: str, section_title: str) -> str:
    """``[Doc title > Section]``, or ``[Doc title]`` for text under the title itself."""
    if section_title == document_title:
        return f"[{document_title}]"
    return f"[{document_title} > {section_title}]"


def split_at(sections: Sequence[Section], cuts: Sequence[int]) -> list[Section]:
    """Sections cut at each offset in ``cuts`` (where a PDF page starts, say), so no boundary
    chunk straddles a cut and a ``#page=N`` citation names the only page its quote is on."""
    out = []
    for section in sections:
        inside = [p for p in cuts if section.start < p < section.end]
        for start, end in zip([section.start, *inside], [*inside, section.end], strict=True):
            out.append(Section(section.title, start, end))
    return out


def chunk_document(document_id: str, document_title: str, canonical: str,
                   strategy: ChunkingStrategy, settings: ChunkingSettings | None = None,
                   sections: Sequence[Section] = (), cuts: Sequence[int] = (),
                   tables: Sequence[TableSpan] = ()) -> list[Chunk]:
    """Cuts one document with one strategy; chunks come in reading order.

    The boundary strategies cut each of the extractor's ``sections`` (see
    :func:`body_sections`) on its own, labelled by its title, and never pack text from both
    sides of an offset in ``cuts`` (the starts of a PDF's pages) into one chunk; a table of
    ``tables`` is one row a chunk. The header strategies put the header row of the
    table a chunk starts in after the ``[Title > Section]`` line of its ``text`` when the chunk
    starts after that header row and does not start with it again (a PDF page repeating it);
    its ``content`` stays the exact slice. The blind
    strategies cut the whole text, each window labelled by the section it starts in.
    """
    settings = settings or ChunkingSettings()
    sections = body_sections(canonical, document_title, sections)
    if strategy.blind:
        located = []
        section_starts = [sec.start for sec in sections]
        for s, e in blind_spans(canonical, settings.target_chars):
            owner = bisect_right(section_starts, s) - 1
            located.append((sections[owner].title if owner >= 0 else document_title, s, e))
    else:
        located = [(section.title, s, e) for section in split_at(sections, cuts)
                   for s, e in boundary_spans(canonical, section, settings.target_chars,
                                              settings.hard_max_chars, tables)]
    chunks: list[Chunk] = []
    previous_content = ""
    for ordinal, (section_title, start, end) in enumerate(located):
        content = canonical[start:end]
        header = context_header(document_title, section_title) if strategy.header else ""
        tail = (previous_content[max(0, len(previous_content) - settings.overlap_chars):]
                if strategy.overlap else "")
        body = f"{tail} {content}" if tail else content
        table_header = repeated_header(tables, start) if strategy.header else ""
        if table_header and not content.startswith(table_header):
            body = f"{table_header}\n{body}"
        text = f"{header}\n{body}" if header else body
        chunks.append(Chunk(f"{document_id}:{start}-{end}", document_id, ordinal, section_title,
                            header, text, content, start, end))
        previous_content = content
    return chunks


def offset_errors(canonical: str, chunks: Iterable[Chunk]) -> list[str]:
    """Chunk ids whose ``canonical[start:end]`` is not exactly their ``content``."""
    return [c.chunk_id for c in chunks if canonical[c.start:c.end] != c.content]


def uncovered_characters(canonical: str, spans: Iterable[tuple[int, int]],
                         sections: Sequence[Section] = ()) -> list[int]:
    """Positions of non-blank characters inside a section's body (the whole text when there are
    no sections) that no span covers."""
    covered = bytearray(b"\x01" * len(canonical)) if sections else bytearray(len(canonical))
    for section in sections:
        covered[section.start:section.end] = bytes(section.end - section.start)
    for s, e in spans:
        covered[s:e] = b"\x01" * (e - s)
    return [i for i, ch in enumerate(canonical) if not covered[i] and not ch.isspace()]
