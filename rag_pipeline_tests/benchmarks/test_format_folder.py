"""The held-out folder of every format: each document read, its needle quoted whole by one chunk."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from rag_pipeline.benchmarks.format_folder import (
    FILES,
    debian_files,
    debian_needle,
    folder_tables,
    score_folder,
    write_folder,
)
from rag_pipeline.core.ingest.pdf_ocr import tesseract_version


def test_a_debian_needle_is_a_line_of_6_to_14_words_that_occurs_once():
    text = ("Short.\n"
            "This line has far too many words to be a needle because it runs on and on.\n"
            "The package keeps its keys in the system folder\n"
            "The package keeps its keys in the system folder\n"  # twice: not a needle
            "Set the option in the file under etc and restart\n")
    assert debian_needle(text) == "Set the option in the file under etc and restart"
    assert debian_needle("one two three\n") is None


def test_debian_files_are_taken_per_name_with_their_needles(tmp_path: Path):
    for package in ("alpha", "beta"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "README.Debian").write_text(
            f"{package}\n\nThe {package} package reads its settings at start-up\n")
    (tmp_path / "beta" / "changelog.Debian.gz").write_bytes(
        gzip.compress(b"beta (1.0-1) unstable; urgency=medium\n\n  * New upstream release for the gauges.\n"))
    found = debian_files(tmp_path, per_name=1)
    assert {name: needle for name, (_, needle) in found.items()} == {
        "debian/alpha/README.Debian": "The alpha package reads its settings at start-up",
        "debian/beta/changelog.Debian.gz": "* New upstream release for the gauges.",  # from the middle on
    }


@pytest.mark.slow  # OCR of three images, a PDF and an Office file per format
@pytest.mark.skipif(tesseract_version() is None, reason="tesseract is not installed")
def test_every_document_of_every_format_is_read_and_quotes_its_needle(tmp_path: Path):
    debian = {"debian/pkg/README.Debian": (b"Notes\n\nThe service starts after the network is up.\n",
                                           "The service starts after the network is up.")}
    scored, others = score_folder(tmp_path, write_folder(tmp_path, debian))
    assert [(p.document_id, p.status, p.quoted) for p in scored if not p.quoted or p.status != "ok"] == []
    assert len(scored) == sum(len(needles) for _, needles in FILES.values()) + 1 == 34
    assert sum(p.image for p in scored) == 3
    # The containers' own records (the mail, the mailbox, the archives) and nothing else.
    assert [(r.document_id, r.status) for r in others] == [
        ("exports.zip", "ok"), ("inbox.mbox", "ok"), ("notes.tar.gz", "ok")]
    assert folder_tables(scored, others).endswith(
        "needles quoted whole: made here 1.000 (30/30), images 1.000 (3/3), Debian files "
        "1.000 (1/1); documents not read: 0")
