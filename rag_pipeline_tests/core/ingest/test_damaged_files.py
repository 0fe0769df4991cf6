"""Damaged files of the new formats fail with a reason; nothing else ever leaves ``extract``.

A format says why a file cannot be read with :class:`ExtractionError`; the corpus turns any
other exception a reader lets out into one too (``reader_failures``), so one damaged file fails
alone, with the library's words. Seeded random damage (bytes overwritten, cut out, inserted)
to a valid file of each format must give either a document whose spans lie inside its text or
an :class:`ExtractionError`. (Damage inside a zip member mostly trips its CRC; the XLSX and
DOCX tests plant damaged XML inside a valid archive.)
"""

from __future__ import annotations

import io
import json
import random
import zipfile
from pathlib import Path

import pytest

from rag_pipeline.core.ingest import ExtractionError, extract_corpus, format_named
from rag_pipeline_tests.core.ingest.formats.test_csv import PARTS
from rag_pipeline_tests.core.ingest.formats.test_docx import manual
from rag_pipeline_tests.core.ingest.formats.test_srt import FILM
from rag_pipeline_tests.core.ingest.formats.test_webvtt import TALK
from rag_pipeline_tests.core.ingest.formats.test_xlsx import budget_workbook
from rag_pipeline_tests.core.ingest.pdf_fixtures import plain_pdf

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


def _zip_with_a_member_named_by_a_nul() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("Xa.md", "# A\n\nText.\n")
    return buffer.getvalue().replace(b"Xa.md", b"\x00a.md")


def test_a_file_a_reader_library_chokes_on_fails_alone_and_the_run_goes_on(tmp_path: Path):
    """Found by an attack: each of these stopped the whole run with the library's exception,
    naming no file, and every run after it the same way."""
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "good.md").write_bytes(b"# Good\n\nThe cafeteria opens at noon.\n")
    (root / "million.pdf").write_bytes(plain_pdf([["Page one."], ["Page two."]]).replace(
        b"/Count 2", b"/Count 1000000"))
    (root / "nul.zip").write_bytes(_zip_with_a_member_named_by_a_nul())
    (root / "meta.ipynb").write_bytes(json.dumps({
        "cells": [], "metadata": {"kernelspec": "python"}, "nbformat": 4,
        "nbformat_minor": 5}).encode())
    (root / "deep.ipynb").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    damaged = "the file may be damaged; open and save it again, or report it"
    assert {r.document_id: (r.status, r.error) for r in extract_corpus(root).records} == {
        "million.pdf": ("failed", "over 100 of the 1,000,000 pages its page tree counts cannot "
                                  "be loaded: a damaged PDF"),
        "deep.ipynb": ("failed", "nested too deeply for the ipynb reader: the file is damaged "
                                 "or built to break readers"),
        "good.md": ("ok", None),
        "meta.ipynb": ("failed", "the ipynb reader failed on this file (AttributeError: 'str' "
                                 f"object has no attribute 'get'): {damaged}"),
        "nul.zip": ("failed", f"the zip reader failed on this file (IndexError: string index "
                              f"out of range): {damaged}")}


def test_text_that_is_no_unicode_is_shown_as_replacement_characters_and_counted(tmp_path: Path):
    """A notebook's ``"\\ud800"`` read as ok, then stopped the run when its text was written:
    a lone surrogate is no UTF-8."""
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "odd.ipynb").write_bytes(json.dumps({
        "cells": [{"cell_type": "markdown", "metadata": {}, "source": "Half \ud800 a pair."}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode())
    record = extract_corpus(root).records[0]
    assert (record.status, record.canonical_text, dict(record.notes)["not_unicode_replaced"]) == (
        "ok", "Half \ufffd a pair.\n", "1")
    record.canonical_text.encode("utf-8")


def test_a_pdf_counting_more_pages_than_it_has_keeps_those_it_has(tmp_path: Path):
    """Found by an attack: a page count one too high failed the whole PDF (first with PDFium's
    exception stopping the run); its readable pages are read and the others named."""
    from rag_pipeline.core.ingest.extracted import left_out

    root = tmp_path / "corpus"
    root.mkdir()
    (root / "count.pdf").write_bytes(plain_pdf([["Page one."], ["Page two."]]).replace(
        b"/Count 2", b"/Count 3"))
    record = extract_corpus(root).records[0]
    assert (record.status, record.canonical_text) == ("ok", "Page one.\n\nPage two.\n")
    assert left_out(record.notes) == ["page(s) 3 could not be loaded (a damaged PDF) and are left out"]
