"""Plain text: the file as it is (UTF-8, or the UTF-16/UTF-32 a byte-order mark declares; ``\n``
line ends); the title is the file name's stem."""

from __future__ import annotations

from rag_pipeline.core.ingest.bom_text import decode_text
from rag_pipeline.core.ingest.extracted import Extracted, Extractor
from rag_pipeline.core.ingest.formats.base import DocumentFormat


class TextFormat(DocumentFormat):
    """``.txt`` and ``.text`` files, and the suffix-less files every project ships."""

    name = "text"
    suffixes = (".txt", ".text")
    plain_text = True
    file_names = ("README", "LICENSE", "CHANGELOG", "NEWS", "INSTALL", "COPYING")
    links_by_text = True

    def extractor(self) -> Extractor:
        return Extractor("plain-text", "6")

    def extract(self, data: bytes, stem: str) -> Extracted:
        decoded = decode_text(data, "text")
        return Extracted(title=stem, canonical_text=decoded.text, notes=decoded.notes)
