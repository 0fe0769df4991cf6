"""What a file's first bytes say it is, whatever its name: a PDF saved as ``report.txt`` fails
naming what it is, not the first byte that is not text.

A signature only names what bytes that fail as text are: ``%PDF-`` and ``GIF89a`` are
printable, and a text file that begins with them (a note on PDF versions) reads as text. A PDF
written in ASCII alone (its version line, its end-of-file marker: :func:`plainly_pdf`) is a PDF
all the same.
"""

from __future__ import annotations

import re

_PDF_HEADER = re.compile(rb"%PDF-\d\.\d[\r\n]")
PDF_TAIL_BYTES = 1024
"""How far from the end a PDF's ``%%EOF`` may be (the PDF specification's reader allowance)."""

SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "a PDF"),
    (b"PK\x03\x04", "a zip archive (an Office document, an EPUB or a .zip)"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Office document (.doc, .xls, .ppt) or an Outlook .msg"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"\x7fELF", "a program (ELF)"),
    (b"\xfd7zXZ\x00", "xz-compressed data"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"ID3", "an MP3 audio file"),
    (b"OggS", "an Ogg audio or video file"),
    (b"fLaC", "a FLAC audio file"),
    (b"RIFF", "a RIFF file (WAV audio, AVI video or a WebP image)"),
    (b"\x1a\x45\xdf\xa3", "a Matroska or WebM video"),
)
"""Leading bytes and what a file that starts with them is."""
BOXED_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"ftyp", "an MP4 audio or video file (.mp4, .m4a, .mov)"),
)
"""The type of an ISO media file's first box, at offset 4 (after the box's size), and what a
file whose first box it is is."""


def signature_of(data: bytes) -> str | None:
    """What ``data`` is by its leading bytes (``"a PDF"``), or None when they name nothing."""
    return next((what for lead, what in SIGNATURES if data.startswith(lead)), None) or next(
        (what for box, what in BOXED_SIGNATURES if data[4:8] == box), None)


def plainly_pdf(data: bytes) -> bool:
    """Whether ``data`` is a PDF however printable its bytes: a ``%PDF-1.x`` line first and the
    ``%%EOF`` marker within the last :data:`PDF_TAIL_BYTES`."""
    return _PDF_HEADER.match(data) is not None and b"%%EOF" in data[-PDF_TAIL_BYTES:]
