"""Text files read as UTF-8, or as the UTF-16/UTF-32 their byte-order mark declares.

Subtitle tools and spreadsheet exports ("Unicode text") write UTF-16 with a byte-order mark; the
mark makes the encoding certain, so such a file is read, never guessed at. Without a mark the
file must be UTF-8; anything else fails with the offset and the byte found there.
"""

from __future__ import annotations

import codecs

from rag_pipeline.core.ingest.extracted import ExtractionError

_MARKS = (  # longest first: the UTF-32 LE mark starts with the UTF-16 LE one
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"), (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"), (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
)


def decode_text(data: bytes, kind: str) -> str:
    """The file's text without its byte-order mark, ``\\r\\n`` and ``\\r`` line ends as ``\\n``.

    Args:
        data: The file's bytes.
        kind: The format's name for the reason (``"CSV"``).

    Raises:
        ExtractionError: Bytes that are not text in the declared (or, without a mark, UTF-8)
            encoding, with the offset and the byte.
    """
    encoding, name, body = "utf-8", "UTF-8", data
    for mark, codec, label in _MARKS:
        if data.startswith(mark):
            encoding, name, body = codec, label, data[len(mark):]
            break
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        offset = exc.start + len(data) - len(body)
        raise ExtractionError(
            f"not {name}: byte 0x{data[offset]:02x} at offset {offset} ({exc.reason}); {kind} "
            "files are read as UTF-8, or as UTF-16/UTF-32 with a byte-order mark") from exc
    return text.replace("\r\n", "\n").replace("\r", "\n")
