"""The contract every document format fulfils: suffixes, stamp, extraction, citation fragment."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from rag_pipeline.core.ingest.extracted import Anchor, Extracted, Extractor
from rag_pipeline.core.ingest.locator import CharLocator


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
    """

    name: ClassVar[str]
    suffixes: ClassVar[tuple[str, ...]]
    file_names: ClassVar[tuple[str, ...]] = ()
    cut_at_anchors: ClassVar[bool] = False
    links_by_text: ClassVar[bool] = False

    @abstractmethod
    def extractor(self) -> Extractor:
        """The stamp of this format's extraction (library versions included)."""

    @abstractmethod
    def extract(self, data: bytes, stem: str) -> Extracted:
        """Reads a file's bytes; ``stem`` is the fall-back title.

        Raises:
            ExtractionError: With the reason the file cannot be read.
        """

    def fragment(self, anchors: Sequence[Anchor], start: int, end: int) -> str:
        """The URL fragment of ``canonical_text[start:end]``: ``#char=start,end`` (RFC 5147)."""
        return CharLocator(start, end).fragment

    def page_span(self, anchors: Sequence[Anchor], start: int, end: int) -> tuple[int, int] | None:
        """(the page ``canonical_text[start:end]`` starts on, its last page), 1-based, for the
        ``page`` and ``last_page`` columns of the chunks table; ``None`` for a format without
        pages."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
