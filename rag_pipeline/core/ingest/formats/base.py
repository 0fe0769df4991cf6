"""The contract every document format fulfils: suffixes, stamp, extraction, citation fragment."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from rag_pipeline.core.ingest.extracted import (
    Anchor,
    Extracted,
    Extractor,
    TableSpan,
    reader_failures,
    valid_unicode,
)
from rag_pipeline.core.ingest.locator import CharLocator
from rag_pipeline.core.ingest.tables import with_rows

if TYPE_CHECKING:
    from rag_pipeline.core.ingest.members import Expansion, Unpacking


class DocumentFormat(ABC):
    """One way of reading files into :class:`Extracted` documents.

    A format is one module in ``core/ingest/formats/`` and one entry in ``REGISTRY``.

    Attributes:
        name: The ``format`` value of its documents' rows.
        suffixes: File suffixes it reads, lower-case, with the dot.
        file_names: Suffix-less file names it claims (``README`` for text).
        cut_at_anchors: Chunking never packs text of two anchors into one chunk (a PDF page
            today); otherwise chunks may span anchors and cite all of them.
        links_by_text: A link into a published copy of the document (``--base-url``) opens at
            the quote with a W3C text fragment (:mod:`rag_pipeline.core.ingest.text_fragment`)
            rather than :meth:`fragment`: pages a browser shows as text (HTML, Markdown, plain
            text), where ``#char=`` opens nothing.
        fragment_names_rows: :meth:`fragment` names the table rows a span holds itself (a
            CSV file's ``#row=``, a sheet's ``&range=``), so a citation adds no ``rows=``
            (:meth:`cited_fragment`).
        rows_name_their_columns: Each table row's line names its values' columns (``Item: Tea
            | Cost: 2.5``: CSV and spreadsheets), so a citation of rows needs no header above
            them (:meth:`header_above`).
        plain_text: Its files are text read by :func:`~rag_pipeline.core.ingest.bom_text.
            decode_text` (UTF-8, UTF-16/32 with a byte-order mark, or plainly windows-1252), so
            an original is served as ``text/plain`` with the charset its bytes were read by.
        chunked: Its documents' text is chunked and searched; not an archive's or a mailbox's,
            whose text is the list of its members (shown in its view, never cited: each member
            is a document of its own).
    """

    name: ClassVar[str]
    suffixes: ClassVar[tuple[str, ...]]
    file_names: ClassVar[tuple[str, ...]] = ()
    cut_at_anchors: ClassVar[bool] = False
    links_by_text: ClassVar[bool] = False
    fragment_names_rows: ClassVar[bool] = False
    rows_name_their_columns: ClassVar[bool] = False
    plain_text: ClassVar[bool] = False
    chunked: ClassVar[bool] = True

    @abstractmethod
    def extractor(self) -> Extractor:
        """The stamp of this format's extraction (library versions included)."""

    @abstractmethod
    def extract(self, data: bytes, stem: str) -> Extracted:
        """Reads a file's bytes; ``stem`` is the fall-back title.

        Raises:
            ExtractionError: With the reason the file cannot be read.
        """

    def read(self, data: bytes, stem: str) -> Extracted:
        """:meth:`extract` as a corpus run calls it: any failure of the reader on these bytes is
        an ``ExtractionError`` (:func:`~rag_pipeline.core.ingest.extracted.reader_failures`),
        and text that is no Unicode is repaired (:func:`~rag_pipeline.core.ingest.extracted.
        valid_unicode`).

        Raises:
            ExtractionError: With the reason the file cannot be read.
        """
        with reader_failures(self.name):
            extracted = self.extract(data, stem)
        return valid_unicode(extracted)

    def start_run(self) -> None:
        """Called once before a corpus run extracts its files: a format with limits per run
        (PDF's OCR time) starts them afresh; the others have nothing to do."""
        return

    def fragment(self, anchors: Sequence[Anchor], start: int, end: int) -> str:
        """The URL fragment of ``canonical_text[start:end]``: ``#char=start,end`` (RFC 5147)."""
        return CharLocator(start, end).fragment

    def cited_fragment(self, anchors: Sequence[Anchor], tables: Sequence[TableSpan], start: int,
                       end: int) -> str:
        """What a citation of ``canonical_text[start:end]`` ends with: :meth:`fragment`, the
        table rows it holds added unless the fragment names them itself (``#page=3&rows=14-27``,
        ``#slide=2&table=2&rows=1-4`` for the second table on a slide, a CSV file's ``#row=4``)."""
        fragment = self.fragment(anchors, start, end)
        if self.fragment_names_rows:
            return fragment
        return with_rows(fragment, tables, start, end,
                         unit=lambda position: self.fragment(anchors, position, position + 1))

    def header_above(self, tables: Sequence[TableSpan], start: int, end: int) -> str:
        """The header row of the table whose rows ``canonical_text[start:end]`` starts in, when
        the span does not hold it (``City tier | Per diem | Hotel cap`` above ``Tier B | €85 |
        €160``); ``""`` otherwise, and for a format whose rows name their columns."""
        if self.rows_name_their_columns:
            return ""
        return next((table.header for table in tables
                     if table.header and table.header_end <= start < table.end), "")

    def not_answers(self, text: str) -> list[tuple[int, int]]:
        """Spans of ``text``, a piece of this format's canonical text, that answer no question
        whatever their words (a mail's header block, its quoted reply lines): a quoted answer
        never quotes them. None but where a format says."""
        return []

    def shown_quote(self, text: str) -> str:
        """The words a reader sees of ``text``, a piece of this format's canonical text: the
        text itself, but where it is markup a reader never sees as such (Markdown)."""
        return text

    def page_span(self, anchors: Sequence[Anchor], start: int, end: int) -> tuple[int, int] | None:
        """(the page ``canonical_text[start:end]`` starts on, its last page), 1-based, for the
        ``page`` and ``last_page`` columns of the chunks table; ``None`` for a format without
        pages."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ContainerFormat(DocumentFormat):
    """A file that holds other files (an archive, a mail with attachments): each member becomes
    a document of its own, read by its own format (:mod:`rag_pipeline.core.ingest.containers`).

    The container's own record is its :attr:`Expansion.own` document, or, for an archive, the
    list of its members with how each was read.
    """

    @abstractmethod
    def expand(self, data: bytes, stem: str, unpacking: Unpacking) -> Expansion:
        """Reads the container's bytes into its own document and its members.

        Raises:
            ExtractionError: The container as a whole cannot be read, or breaks a limit (member
                count, expanded size): then none of its members is a document.
        """

    def extract(self, data: bytes, stem: str) -> Extracted:
        """The container's own document alone: :attr:`Expansion.own`, or the member names."""
        from rag_pipeline.core.ingest.members import Budget, ContainerLimits, Unpacking

        limits = ContainerLimits()
        expansion = self.expand(data, stem, Unpacking(limits, Budget(limits.max_expanded_bytes),
                                                      limits.max_expanded_bytes))
        if expansion.own is not None:
            return expansion.own
        names = [member.name for member in expansion.members if not member.left_out]
        return Extracted(title=stem, canonical_text="".join(f"{name}\n" for name in names),
                         notes=(("members", str(len(names))),))
