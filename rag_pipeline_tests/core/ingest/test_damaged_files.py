"""Damaged files of the new formats fail with a reason; nothing else ever leaves ``extract``.

The corpus catches only :class:`ExtractionError`, so any other exception out of a format would
stop a whole run for one bad file. Seeded random damage (bytes overwritten, cut out, inserted)
to a valid file of each format must give either a document whose spans lie inside its text or
an :class:`ExtractionError`. (Damage inside a zip member mostly trips its CRC; the XLSX and
DOCX tests plant damaged XML inside a valid archive.)
"""

from __future__ import annotations

import random

import pytest

from rag_pipeline.core.ingest import ExtractionError, format_named
from rag_pipeline_tests.core.ingest.formats.test_csv import PARTS
from rag_pipeline_tests.core.ingest.formats.test_docx import manual
from rag_pipeline_tests.core.ingest.formats.test_srt import FILM
from rag_pipeline_tests.core.ingest.formats.test_webvtt import TALK
from rag_pipeline_tests.core.ingest.formats.test_xlsx import budget_workbook

DAMAGED_COPIES = 60


def _damaged(data: bytes, rng: random.Random) -> bytes:
    damaged = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        at, kind = rng.randrange(len(damaged)), rng.random()
        if kind < 0.4:
            damaged[at] = rng.randrange(256)
        elif kind < 0.7:
            del damaged[at:at + rng.randint(1, 30)]
        else:
            damaged[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 5)))
    return bytes(damaged)


@pytest.mark.parametrize(("name", "valid"), [
    ("csv", lambda: PARTS), ("xlsx", budget_workbook), ("docx", manual),
    ("webvtt", lambda: TALK.encode()), ("srt", lambda: FILM.encode()),
])
def test_damaged_files_fail_with_a_reason_or_read_consistently(name: str, valid):
    fmt, data, rng = format_named(name), valid(), random.Random(f"damage-{name}")
    for _ in range(DAMAGED_COPIES):
        try:
            extracted = fmt.extract(_damaged(data, rng), "damaged")
        except ExtractionError as exc:
            assert str(exc)  # a reason a user can read
            continue
        text = extracted.canonical_text
        assert all(0 <= a.start <= a.end <= len(text) for a in extracted.anchors)
        assert all(0 <= s.start <= s.end <= len(text) for s in extracted.sections)
        assert fmt.fragment(extracted.anchors, 0, len(text)).startswith("#")
