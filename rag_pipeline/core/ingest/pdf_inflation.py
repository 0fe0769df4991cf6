"""How far a PDF's compressed streams expand, measured before PDFium reads the file.

PDFium inflates a page's content stream inside one call, and frees it before the reading
clock's next look (:mod:`rag_pipeline.core.ingest.reading_limits`): a 1.4 MiB page whose
content stream inflates to 1.5 GiB of blanks took 2.5 GiB and was read ``ok``. So the
``FlateDecode`` streams a text reading inflates (page contents, fonts, object streams: every
one but an image's, which only OCR draws) are inflated here first, a piece at a time, counting
what they expand to and keeping none of it: past :data:`MAX_INFLATED_BYTES` in all, the PDF
fails as a decompression bomb. A stream zlib cannot read (encrypted, damaged) counts as far as
it reads; PDFium judges it.
"""

from __future__ import annotations

import re
import zlib

from rag_pipeline.core.ingest.extracted import ExtractionError

__all__ = ["MAX_INFLATED_BYTES", "check_inflation", "inflated_bytes"]

MAX_INFLATED_BYTES = 512 * 1024 * 1024
"""What a PDF's streams other than images may expand to in all (a 1,000-page manual's text
streams expand to tens of MiB)."""
_STREAM = re.compile(rb"(?<![A-Za-z])stream\r?\n")
_DICTIONARY_BYTES = 2048
"""How far before a ``stream`` keyword its dictionary is looked for."""
_PIECE = 1 << 20


def inflated_bytes(data: bytes, limit: int = MAX_INFLATED_BYTES) -> int:
    """What the ``FlateDecode`` streams of ``data`` other than images expand to, counted up to
    just past ``limit`` (then counting stops)."""
    total = 0
    view = memoryview(data)  # slices of it are not copies
    for match in _STREAM.finditer(data):
        before = data[max(0, match.start() - _DICTIONARY_BYTES):match.start()]
        dictionary = before[before.rfind(b"obj") + 3:] if b"obj" in before else before
        if b"/FlateDecode" not in dictionary or b"/Image" in dictionary:
            continue
        inflater = zlib.decompressobj()
        position = match.end()
        try:
            while total <= limit and not inflater.eof and position < len(data):
                piece = inflater.decompress(view[position:position + _PIECE], _PIECE)
                total += len(piece)
                while inflater.unconsumed_tail and total <= limit and not inflater.eof:
                    total += len(inflater.decompress(inflater.unconsumed_tail, _PIECE))
                position += _PIECE
        except zlib.error:
            pass  # encrypted or damaged: counted as far as it reads
        if total > limit:
            break
    return total


def check_inflation(data: bytes, limit: int | None = None) -> None:
    """Raises when the PDF's streams other than images expand past ``limit`` (None:
    :data:`MAX_INFLATED_BYTES`).

    Raises:
        ExtractionError: A decompression bomb.
    """
    limit = MAX_INFLATED_BYTES if limit is None else limit
    if inflated_bytes(data, limit) > limit:
        raise ExtractionError(f"its compressed streams expand past {limit // (1024 * 1024):,} MiB "
                              "(a decompression bomb): not read")
