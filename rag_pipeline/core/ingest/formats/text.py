"""Plain text: the file as it is (UTF-8, ``\n`` line ends); the title is the file name's stem."""

from __future__ import annotations

from rag_pipeline.core.ingest.extracted import Extracted, Extractor
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.reading import decode_utf8


class TextFormat(DocumentFormat):
    """``.txt`` and ``.text`` files, and the suffix-less files every project ships."""

    name = "text"
    suffixes = (".txt", ".text")
    file_names = ("README", "LICENSE", "CHANGELOG", "NEWS", "INSTALL", "COPYING")
    links_by_text = True

    def extractor(self) -> Extractor:
        return Extractor("plain-text", "1")

    def extract(self, data: bytes, stem: str) -> Extracted:
        return Extracted(title=stem, canonical_text=decode_utf8(data))
