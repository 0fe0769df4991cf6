"""Tests for ``rag_pipeline.core.ingest.corpus`` (with ``reading`` and every registered format): a
corpus folder with planted flaws, read into exact records; unreadable files become ``failed``
records; unchanged ``ok`` records are reused."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import random
import socket
import stat
from pathlib import Path

import pypdfium2
import pytest
from fpdf import FPDF
from fpdf.enums import XPos, YPos
from pypdf import PdfWriter

from rag_pipeline.core.ingest import (
    Anchor,
    DocumentStatus,
    ExtractionSettings,
    Section,
    discover,
    extract_corpus,
    extract_document,
)
from rag_pipeline.core.ingest.formats.html import extract_html
from rag_pipeline.core.ingest.formats.markdown import MarkdownFormat
from rag_pipeline.core.ingest.pdf_ocr import MISSING_TESSERACT, tesseract_version
from rag_pipeline.core.ingest.reading import without_link_target
from rag_pipeline.core.ingest.reconcile import reconciliation_table
from rag_pipeline.core.ingest.sources import SourceError
from rag_pipeline.core.ingest.sources.local import listing, stat_fingerprint
from rag_pipeline_tests.core.ingest.archives import zipped

PDF_EXTRACTOR_VERSION = (f"19+pypdfium2-{pypdfium2.version.PYPDFIUM_INFO.version}"
                         f"+tesseract-{tesseract_version() or 'absent'}")
# A page without text is OCR'd where Tesseract is installed (and a blank one still has none).
NO_TEXT_1_PAGE = ("no text in 1 page(s), not even by OCR" if tesseract_version()
                  else f"1 of 1 {MISSING_TESSERACT}")


def text_pdf(pages: list[list[str]], title: str | None = None) -> bytes:
    """A PDF with a real text layer, one ``cell`` line per string."""
    pdf = FPDF()
    if title:
        pdf.set_title(title)
    pdf.set_font("Helvetica", size=12)
    for lines in pages:
        pdf.add_page()
        for line in lines:
            pdf.cell(text=line, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    return bytes(pdf.output())


def drawing_only_pdf() -> bytes:
    """A one-page PDF whose only content is a drawn rectangle: no text layer."""
    pdf = FPDF()
    pdf.add_page()
    pdf.rect(10, 10, 50, 30)
    return bytes(pdf.output())


def encrypted_pdf(plain: bytes) -> bytes:
    writer = PdfWriter(clone_from=io.BytesIO(plain))
    writer.encrypt(user_password="secret", owner_password="owner")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


GUIDE_MD = b"---\ntitle: Front Title\nauthor: someone\n---\n# Real Title\n\nBody text.\n"
NOTES_TXT = b"Plain notes.\r\nSecond line.\r\n"
PAGE_HTML = (
    b"<html><head><title>Page  Title</title><style>p {color: red}</style>"
    b"<script>var hidden = 1;</script></head>"
    b"<body><nav><a href='/'>Home</a></nav><h1>Main</h1><p>First   para\n wraps.</p>"
    b"<script>alert('dropped')</script><h2>Sub</h2><ul><li>One</li><li>Two</li></ul></body></html>"
)
REPORT_PDF_PAGES = [["Alpha page one.", "Second line here."], ["Beta page two."]]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    # Good: YAML front matter stripped; the "# " heading wins over the front-matter title.
    (root / "guide.md").write_bytes(GUIDE_MD)
    # Good: plain text; CRLF line ends must come out as "\n".
    (root / "notes.txt").write_bytes(NOTES_TXT)
    # Good: title from <title>; headings as paragraphs; script, style and nav dropped.
    (root / "page.html").write_bytes(PAGE_HTML)
    # Good: two pages with a text layer; the page anchors must be exact.
    (root / "report.pdf").write_bytes(text_pdf(REPORT_PDF_PAGES, title="Quarterly Report"))
    # Good: nested folder, no heading -> title is the stem; id uses a forward slash.
    (root / "sub" / "nested.md").write_bytes(b"Nested body.\n")
    # Flaw: password-protected PDF -> failed "encrypted PDF".
    (root / "locked.pdf").write_bytes(encrypted_pdf(text_pdf([["Secret page."]])))
    # Flaw: a page with only a drawn rectangle -> failed "no text layer".
    (root / "scan.pdf").write_bytes(drawing_only_pdf())
    # Flaw: random bytes with a .pdf suffix -> failed "not a PDF" (no %PDF- header).
    (root / "corrupt.pdf").write_bytes(random.Random(7).randbytes(2048))
    # Flaw: Latin-1 bytes in a .md ("é" is 0xE9 at byte 5) beside 0x81, which is no
    # windows-1252 character either -> failed "not UTF-8" (plain Latin-1 would be read).
    (root / "latin1.md").write_bytes(b"# Caf\xe9\x81\n\nBody.\n")
    # Flaw: an empty .txt -> failed "no text".
    (root / "empty.txt").write_bytes(b"")
    # Flaw: a symlink to a file outside the root -> failed "outside the corpus root".
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_bytes(b"# Secret\n\nNot part of the corpus.\n")
    (root / "link.md").symlink_to(outside / "secret.md")
    # Left out by discover: a hidden file and a file in a hidden folder.
    (root / ".draft.md").write_bytes(b"# Draft\n")
    (root / ".cache").mkdir()
    (root / ".cache" / "cached.md").write_bytes(b"# Cached\n")
    # Skipped with its reason: a suffix no format reads, bytes that are not text (a NUL at 7).
    (root / "program.bin").write_bytes(b"\x7fELF\x02\x01\x01\x00")
    # Good: a suffix-less name no format claims, whose bytes are text, is plain text.
    (root / "Makefile").write_bytes(b"all:\n\ttrue\n")
    # Good: a suffix-less README is text.
    (root / "README").write_bytes(b"Read me first.\n")
    return root


EXPECTED_IDS = ["Makefile", "README", "corrupt.pdf", "empty.txt", "guide.md", "latin1.md", "link.md",
                "locked.pdf", "notes.txt", "page.html", "program.bin", "report.pdf", "scan.pdf",
                "sub/nested.md"]
OK_IDS = ["Makefile", "README", "guide.md", "notes.txt", "page.html", "report.pdf", "sub/nested.md"]
SKIPPED = {"program.bin": "no reader for .bin files, and not plain text (binary: its first bytes "
                          "are those of a program (ELF))"}


def by_id(records):
    return {r.document_id: r for r in records}


def test_discover_leaves_out_hidden_files_only(corpus):
    assert [p.relative_to(corpus).as_posix() for p in discover(corpus)] == EXPECTED_IDS


def test_the_report_names_each_hidden_name_once_at_its_top(corpus):
    # A hidden folder is one row (not one per file in it), with the reason it was left out.
    hidden = [(r.document_id, r.detail) for r in extract_corpus(corpus).report.rows
              if r.change == "hidden"]
    assert hidden == [(".cache", "a name starting with '.': not part of the corpus"),
                      (".draft.md", "a name starting with '.': not part of the corpus")]


def test_a_hidden_folder_is_named_without_being_walked_into(tmp_path, monkeypatch):
    root = tmp_path / "corpus"
    (root / ".git" / "objects" / "ab").mkdir(parents=True)
    (root / ".git" / "objects" / "ab" / "cdef").write_bytes(b"blob")
    (root / "docs" / ".cache").mkdir(parents=True)
    (root / "docs" / "guide.md").write_bytes(b"# Guide\n")
    scanned: list[str] = []
    real_scandir = os.scandir

    def recording_scandir(path="."):
        scanned.append(Path(path).relative_to(root).as_posix())
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", recording_scandir)
    found, hidden = listing(root)
    assert ([p.relative_to(root).as_posix() for p in found], hidden) == (
        ["docs/guide.md"], (".git", "docs/.cache"))
    assert sorted(scanned) == [".", "docs"]


def test_an_empty_file_of_any_format_or_member_says_it_is_empty(tmp_path):
    # Found by a user: a 0-byte PDF failed as "Failed to load document (PDFium: Data format
    # error)", which does not say the file is empty.
    import zipfile

    root = tmp_path / "corpus"
    root.mkdir()
    for name in ("report.pdf", "deck.pptx", "notes.md"):
        (root / name).write_bytes(b"")
    with zipfile.ZipFile(root / "bundle.zip", "w") as bundle:
        bundle.writestr("empty.docx", b"")
        bundle.writestr("kept.md", b"# Kept\n")
    records = {r.document_id: (r.status, r.error) for r in extract_corpus(root).records}
    empty = ("failed", "an empty file (0 bytes): nothing to read")
    assert records == {"bundle.zip": ("ok", None), "bundle.zip/empty.docx": empty,
                       "bundle.zip/kept.md": ("ok", None), "deck.pptx": empty,
                       "notes.md": empty, "report.pdf": empty}


def test_a_document_that_becomes_skipped_or_unreadable_is_reported_as_leaving_the_index(tmp_path):
    # Found by a team whose folder changes daily: one that became unreadable was counted
    # `failed` alone, with nothing saying its passages had left the index.
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "notes").write_bytes(b"Plain notes.\n")
    (root / "tool").write_bytes(b"Never indexed.\x00")
    (root / "rota.md").write_bytes(b"# Rota\n\nBackups run nightly.\n")
    (root / "broken.pdf").write_bytes(b"%PDF-1.7\ntruncated")
    first = extract_corpus(root)
    (root / "notes").write_bytes(b"\x7fELF\x02\x01\x01\x00")
    (root / "rota.md").write_bytes(b"")
    again = extract_corpus(root, first.records)
    assert [(r.change, r.document_id, r.detail) for r in again.report.rows] == [
        ("failed", "broken.pdf", "not retried: unchanged since it failed: unreadable PDF: "
                                 "Failed to load document (PDFium: Data format error)."),
        ("failed", "rota.md", "an empty file (0 bytes): nothing to read; it was indexed before "
                              "and leaves the index"),
        ("skipped", "notes", "no reader for files named notes (without a suffix), and not plain "
                             "text (binary: its first bytes are those of a program (ELF)); it "
                             "was indexed before and leaves the index"),
        ("skipped", "tool", "no reader for files named tool (without a suffix), and not plain "
                            "text (binary: a NUL byte at offset 14)")]


def test_a_file_without_a_suffix_the_system_will_not_read_fails_and_is_retried(tmp_path,
                                                                               monkeypatch):
    # Found by a user: a team's NOTES the system would not read (permission denied) was listed
    # as skipped, with the files no format reads, not as failed: it may be a text document.
    (tmp_path / "NOTES").write_bytes(b"The backup runs at 02:00.\n")
    (tmp_path / "plan.md").write_bytes(b"# Plan\n\nShip it.\n")
    real_open = os.open
    denied = {str((tmp_path / "NOTES").resolve()), str((tmp_path / "plan.md").resolve())}

    def refusing_open(path, *args, **kwargs):
        if str(path) in denied:
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    first = extract_corpus(tmp_path)
    assert [(r.document_id, r.status, r.format, r.error) for r in first.records] == [
        ("NOTES", "failed", "text", "unreadable: Permission denied"),
        ("plan.md", "failed", "markdown", "unreadable: Permission denied")]
    assert [(row.change, row.document_id) for row in first.report.rows] == [
        ("failed", "NOTES"), ("failed", "plan.md")]
    denied.clear()  # the permission is mended; the files are as they were
    second = extract_corpus(tmp_path, first.records)
    assert (second.extracted, second.not_retried) == (0, 2)
    retried = extract_corpus(tmp_path, first.records, settings=ExtractionSettings(retry_failed=True))
    assert [(r.document_id, r.status, r.canonical_text) for r in retried.records] == [
        ("NOTES", "ok", "The backup runs at 02:00.\n"), ("plan.md", "ok", "# Plan\n\nShip it.\n")]


def test_a_skipped_file_deleted_is_reported_deleted(tmp_path):
    # Found by a user: it left the list of what was not indexed with no word in the report.
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "notes.md").write_bytes(b"# Notes\n\nBackups run nightly.\n")
    (root / "logo.7z").write_bytes(b"7z\xbc\xaf\x27\x1c\x00\x04")
    first = extract_corpus(root)
    (root / "logo.7z").unlink()
    again = extract_corpus(root, first.records)
    assert [(r.change, r.document_id, r.detail) for r in again.report.rows] == [
        ("deleted", "logo.7z", "skipped before (no reader for .7z files, and not plain text "
                               "(binary: its first bytes are those of a 7-Zip archive))"),
        ("unchanged", "notes.md", "")]
    assert again.report.summary() == ("added 0, changed 0, renamed 0, deleted 1, unchanged 1, "
                                      "failed 0, skipped 0, hidden 0")


def test_a_folder_that_cannot_be_listed_stops_the_listing(tmp_path, monkeypatch):
    # Found by a review: a walk that passed over a folder it could not list (an I/O error, a
    # network share gone stale) took its documents for deleted, and the run unpublished them.
    import errno

    root = tmp_path / "corpus"
    (root / "a").mkdir(parents=True)
    (root / "a" / "b.md").write_bytes(b"# B\n")
    (root / "c.md").write_bytes(b"# C\n")
    real_scandir = os.scandir

    def failing(path="."):
        if Path(path) == root / "a":
            raise OSError(errno.EIO, "Input/output error", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", failing)
    with pytest.raises(SourceError) as stopped:
        extract_corpus(root)
    assert str(stopped.value) == (
        "the folder a of the corpus could not be listed (Input/output error): nothing is "
        "published, the served index is as it was; make it readable by this user, or rename it "
        "to start with '.' to leave it out of the corpus")


def test_a_folder_path_longer_than_the_system_takes_stops_the_listing_with_its_name(tmp_path):
    """Found by an attack: the walk's ENAMETOOLONG left the run as a bare OSError."""
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "c.md").write_bytes(b"# C\n")
    name, depth = "D" * 250, 20  # 20 x 251 bytes: past PATH_MAX (4096)
    folder = os.open(root, os.O_RDONLY)
    for _ in range(depth):  # made relative to each folder: the path itself is too long to name
        os.mkdir(name, dir_fd=folder)
        inner = os.open(name, os.O_RDONLY, dir_fd=folder)
        os.close(folder)
        folder = inner
    os.close(folder)
    with pytest.raises(SourceError) as stopped:
        extract_corpus(root)
    message = str(stopped.value)
    assert message.startswith(f"the folder {name}/{name}/")
    assert message.endswith(" of the corpus could not be listed (File name too long): nothing is "
                            "published, the served index is as it was; make it readable by this "
                            "user, or rename it to start with '.' to leave it out of the corpus")


def test_hidden_names_below_the_root_and_undecodable_ones_are_reported_and_written(tmp_path):
    root = tmp_path / "corpus"
    (root / "docs" / ".cache" / "deep").mkdir(parents=True)
    (root / "docs" / "guide.md").write_bytes(b"# Guide\n\nBody.\n")
    (root / "docs" / ".cache" / "deep" / "x.md").write_bytes(b"# X\n")
    (root / os.fsdecode(b".caf\xe9")).write_bytes(b"not UTF-8 in its name\n")
    (root / "tool.bin").write_bytes(b"\x7fELF\x02\x01\x01\x00")
    report = extract_corpus(root).report
    assert [(r.change, r.document_id) for r in report.rows] == [
        ("added", "docs/guide.md"), ("hidden", ".caf\\xe9"), ("hidden", "docs/.cache"),
        ("skipped", "tool.bin")]
    # Every name the report holds is one a table can store (a lone surrogate failed the write).
    assert reconciliation_table(report, "T").column("document_id").to_pylist() == [
        "docs/guide.md", ".caf\\xe9", "docs/.cache", "tool.bin"]


def test_every_file_gets_a_record_with_its_exact_status(corpus, tmp_path):
    result = extract_corpus(corpus)
    records = by_id(result.records)
    assert [r.document_id for r in result.records] == EXPECTED_IDS
    assert (result.extracted, result.reused) == (13, 0)
    assert sorted(r.document_id for r in result.records if r.ok) == OK_IDS
    assert {r.document_id: r.error for r in result.skipped} == SKIPPED
    for r in result.skipped:  # read to see that it is not text: its digest is kept
        assert (r.status, r.format, r.canonical_text, r.content_sha256) == (
            "skipped", "", "", hashlib.sha256(Path(r.path).read_bytes()).hexdigest())
    assert (records["README"].format, records["README"].canonical_text) == ("text", "Read me first.\n")
    assert (records["Makefile"].format, records["Makefile"].canonical_text) == ("text", "all:\n\ttrue\n")
    errors = {r.document_id: r.error for r in result.failed}
    assert errors.pop("corrupt.pdf").startswith("not a PDF: no %PDF- header in its first 1024 bytes")
    assert errors == {
        "empty.txt": "an empty file (0 bytes): nothing to read",
        "latin1.md": ("not UTF-8: byte 0xe9 at offset 5 (invalid continuation byte); Markdown "
                      "files are read as UTF-8, or as UTF-16/UTF-32 with a byte-order mark, or as "
                      "windows-1252 when plainly that: save it as UTF-8 (another encoding, such "
                      "as Shift-JIS, GB18030, KOI8-R or UTF-16 without a byte-order mark, is not "
                      "guessed)"),
        "link.md": f"outside the corpus root: resolves to {(tmp_path / 'outside' / 'secret.md').resolve()}",
        "locked.pdf": "encrypted PDF: no password is configured",
        "scan.pdf": NO_TEXT_1_PAGE,
    }
    for r in result.failed:
        assert (r.status, r.canonical_text, r.title) == (DocumentStatus.FAILED.value, "", Path(r.path).stem)
    # A failed file that was read still carries its bytes' digest; the symlink was never read.
    assert records["latin1.md"].content_sha256 == hashlib.sha256(b"# Caf\xe9\x81\n\nBody.\n").hexdigest()
    assert records["link.md"].content_sha256 == ""


def test_markdown_front_matter_is_in_no_section_and_the_heading_is_the_title(corpus):
    # Found by a user: with the front matter cut from the canonical text, every #char= of the
    # file counted from after it, and pointed at other characters of the file.
    record = extract_document(corpus / "guide.md", corpus)
    assert (record.status, record.error) == ("ok", None)
    assert record.title == "Real Title"
    assert record.canonical_text == GUIDE_MD.decode()
    assert record.content_sha256 == hashlib.sha256(GUIDE_MD).hexdigest()
    assert (record.format, record.extractor, record.extractor_version) == (
        "markdown", "markdown-frontmatter", "10")
    # The text before "# Real Title" (none) and the heading's body, both titled by the document;
    # the front matter (43 characters) is in neither, so in no chunk.
    assert record.sections == (Section("Real Title", 43, 43, 1), Section("Real Title", 55, 68, 1))
    assert record.canonical_text[55:68] == "\n\nBody text.\n"
    assert (record.anchors, record.notes) == ((), ())


def test_front_matter_title_is_used_when_there_is_no_heading():
    data = b'---\ntitle: "Front Title"\n---\nNo heading here.\n| a | b |\n| - | - |\n| 1 | 2 |\n'
    extracted = MarkdownFormat().extract(data, "stem")
    assert (extracted.title, extracted.canonical_text) == ("Front Title", data.decode())
    assert [(s.start, s.end) for s in extracted.sections] == [(29, len(data))]
    (table,) = extracted.tables
    assert data.decode()[table.start:table.end] == "| a | b |\n| - | - |\n| 1 | 2 |"


def test_text_is_read_as_it_is_with_normalised_line_ends(corpus):
    record = extract_document(corpus / "notes.txt", corpus)
    assert (record.status, record.title, record.canonical_text) == (
        "ok", "notes", "Plain notes.\nSecond line.\n")
    assert (record.format, record.extractor) == ("text", "plain-text")


def test_html_blocks_become_paragraphs_and_headings(corpus):
    record = extract_document(corpus / "page.html", corpus)
    assert record.status == "ok"
    assert record.title == "Page Title"
    assert record.canonical_text == "Main\n\nFirst para wraps.\n\nSub\n\nOne\n\nTwo\n"
    # "Main" [0,4) and "Sub" [25,28) are the headings; the bodies run between them.
    assert record.sections == (Section("Page Title", 0, 0, 1), Section("Page Title", 4, 25, 1),
                               Section("Sub", 28, 39, 2))
    assert record.notes == (("dropped_chrome_elements", "1"),)  # the <nav>
    for dropped in ("hidden", "dropped", "Home", "color"):
        assert dropped not in record.canonical_text


def test_html_title_falls_back_to_the_h1_then_the_stem():
    assert extract_html(b"<h1>Heading</h1><p>x</p>", "stem").title == "Heading"
    assert extract_html(b"<p>x</p>", "stem").title == "stem"


def test_pdf_pages_are_joined_with_exact_page_anchors(corpus):
    record = extract_document(corpus / "report.pdf", corpus)
    assert record.status == "ok"
    assert record.title == "Quarterly Report"
    # Page 1's two lines are one paragraph (33 chars); page 2 starts a new one after "\n\n" at
    # 35, because page 1 ends a sentence. Page anchors tile the text: the gap goes to page 1.
    assert record.canonical_text == "Alpha page one. Second line here.\n\nBeta page two.\n"
    assert record.anchors == (Anchor(0, 35, "page=1"), Anchor(35, 50, "page=2"))
    assert record.canonical_text[35:].startswith("Beta page two.")
    assert (record.format, record.extractor, record.extractor_version) == (
        "pdf", "pdf-pdfium+tesseract", PDF_EXTRACTOR_VERSION)


def test_pdf_title_falls_back_to_the_first_line_when_it_is_no_sentence(tmp_path):
    (tmp_path / "untitled.pdf").write_bytes(text_pdf([["  Supplier terms  ", "Rest."]]))
    record = extract_document(tmp_path / "untitled.pdf", tmp_path)
    # The page is one paragraph "Supplier terms Rest." (20 characters and the final new line).
    assert (record.title, record.anchors) == ("Supplier terms", (Anchor(0, 21, "page=1"),))
    # Found by an admin's trial: a page whose heading repeats on every page (dropped as a
    # running head) was titled by its first sentence; it is titled by the file's name.
    (tmp_path / "q3-forecast.pdf").write_bytes(text_pdf([[
        "Revenue for Q3 is forecast at 18.4 million euros, up 6 percent.", "Rest."]]))
    assert extract_document(tmp_path / "q3-forecast.pdf", tmp_path).title == "q3-forecast"
    # A short line ending in a mark is still a title.
    (tmp_path / "why.pdf").write_bytes(text_pdf([["Why use Dagster?", "Rest."]]))
    assert extract_document(tmp_path / "why.pdf", tmp_path).title == "Why use Dagster?"
    # Found by a user of the page: a manual page printed to PDF, in one size, its running
    # head dropped, was titled by its first section's label; it is titled by the file's name.
    (tmp_path / "grep.pdf").write_bytes(text_pdf([["NAME", "grep - print lines that match patterns"]]))
    assert extract_document(tmp_path / "grep.pdf", tmp_path).title == "grep"
    (tmp_path / "faq.pdf").write_bytes(text_pdf([["FAQ for Operators", "Rest."]]))
    assert extract_document(tmp_path / "faq.pdf", tmp_path).title == "FAQ for Operators"


def test_files_swapped_by_same_size_and_time_are_read_again(tmp_path: Path):
    """Found by an attack: two files of the same size and modification time swapped with ``mv``
    were reported unchanged and served their old texts (the fingerprint was size, time and
    mode alone)."""
    texts = {"menu.md": "Soup of the day: lentil.\n", "merger.md": "Acme Ltd is ours in May.\n"}
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
        os.utime(tmp_path / name, ns=(1_700_000_000_000_000_000,) * 2)
    first = extract_corpus(tmp_path)
    os.replace(tmp_path / "menu.md", tmp_path / "swap")
    os.replace(tmp_path / "merger.md", tmp_path / "menu.md")
    os.replace(tmp_path / "swap", tmp_path / "merger.md")
    second = extract_corpus(tmp_path, previous=first.records)
    assert {r.document_id: r.canonical_text for r in second.records} == {
        "menu.md": "Acme Ltd is ours in May.\n", "merger.md": "Soup of the day: lentil.\n"}
    assert sorted((row.change, row.document_id) for row in second.report.rows) == [
        ("changed", "menu.md"), ("changed", "merger.md")]


def test_reuse_keeps_unchanged_ok_records_and_retries_failed_ones(corpus):
    first = extract_corpus(corpus)
    second = extract_corpus(corpus, previous=first.records)
    # 7 ok records reused as they are, unopened; the 6 failed ones are not retried while their
    # files are as they were when they failed; the skipped one is neither.
    assert (second.extracted, second.reused, second.not_retried) == (0, 13, 6)
    old, new = by_id(first.records), by_id(second.records)
    assert all(new[i] is old[i] for i in OK_IDS)
    # Asked for explicitly, the failed ones are retried (and fail again).
    retried = extract_corpus(corpus, previous=first.records,
                             settings=ExtractionSettings(retry_failed=True))
    assert (retried.extracted, retried.reused, retried.not_retried) == (6, 7, 0)
    assert sorted(r.document_id for r in second.failed) == sorted(
        set(EXPECTED_IDS) - set(OK_IDS) - set(SKIPPED))

    # Planted: notes.txt edited -> its digest changes -> re-extracted.
    (corpus / "notes.txt").write_bytes(b"Edited notes.\n")
    # Planted: empty.txt fixed -> retried (it failed) and now ok.
    (corpus / "empty.txt").write_bytes(b"Now it has text.\n")
    previous = list(second.records)
    # Planted: guide.md's stored record stamped by an older extractor -> re-extracted.
    previous[EXPECTED_IDS.index("guide.md")] = dataclasses.replace(new["guide.md"], extractor_version="0")
    # Planted: a forged ok record for the outside symlink, with the target's real digest (and no
    # fingerprint, so the file is read) -> must not be reused, since the file resolves outside
    # the root.
    secret = Path(new["link.md"].path).resolve().read_bytes()
    previous[EXPECTED_IDS.index("link.md")] = dataclasses.replace(
        new["link.md"], status="ok", error=None, content_sha256=hashlib.sha256(secret).hexdigest(),
        source_fingerprint="")
    # A previous record for a file that no longer exists is ignored.
    previous.append(dataclasses.replace(new["guide.md"], document_id="gone.md"))

    third = extract_corpus(corpus, previous=previous)
    assert [r.document_id for r in third.records] == EXPECTED_IDS
    # Extracted: notes.txt, empty.txt, guide.md, link.md. Reused: Makefile, README, page.html,
    # report.pdf, sub/nested.md and the 4 failed files that did not change.
    assert (third.extracted, third.reused) == (4, 9)
    records = by_id(third.records)
    assert records["notes.txt"].canonical_text == "Edited notes.\n"
    assert (records["empty.txt"].status, records["empty.txt"].canonical_text) == ("ok", "Now it has text.\n")
    assert records["guide.md"].extractor_version == "10"
    # Found by an operator's trial: a file nobody touched was reported "changed", saying nothing.
    assert [(r.change, r.detail) for r in third.report.rows if r.document_id == "guide.md"] == [
        ("changed", "the same bytes, read again by an upgraded extractor (markdown-frontmatter 0 "
                    "-> markdown-frontmatter 10)")]
    assert [r.detail for r in third.report.rows if r.document_id == "notes.txt"] == [""]
    assert records["link.md"].status == "failed"
    assert len(third.failed) == 5


def test_extract_corpus_on_a_missing_folder_raises(tmp_path):
    with pytest.raises(SourceError, match="corpus folder not found"):
        extract_corpus(tmp_path / "nope")


# --- regressions: bugs these tests found, fixed -------------------------------------------


def test_a_pdf_with_a_broken_info_dictionary_is_read_without_its_metadata(tmp_path):
    good = text_pdf([["Alpha page one."]])
    assert good.count(b"/Info 7 0 R") == 1
    # Planted: the trailer's /Info points at a number instead of a dictionary (pypdf raised;
    # PDFium reads the pages and ignores the broken metadata).
    (tmp_path / "bad_info.pdf").write_bytes(good.replace(b"/Info 7 0 R", b"/Info 42"))
    record = extract_document(tmp_path / "bad_info.pdf", tmp_path)
    assert (record.status, record.title, record.canonical_text) == ("ok", "Alpha page one.",
                                                                    "Alpha page one.\n")


def test_a_pdf_with_an_unknown_stream_filter_is_a_failed_record(tmp_path):
    good = text_pdf([["Alpha page one."]])
    # Planted: the page's content stream names a filter no reader knows: the page draws
    # nothing, so it has no text, not even by OCR.
    (tmp_path / "bad_filter.pdf").write_bytes(good.replace(b"/FlateDecode", b"/FlateDecodX"))
    record = extract_document(tmp_path / "bad_filter.pdf", tmp_path)
    assert (record.status, record.error) == ("failed", NO_TEXT_1_PAGE)


# --- files that are not documents, checked before anything is opened -----------------------


def test_a_symlink_to_a_file_inside_the_root_is_skipped_not_read_under_its_name(tmp_path):
    # Found by a user: public/pay.md -> ../hr/pay.md was indexed as public/pay.md, so an
    # [access] rule for public/** let staff read the HR file's words; a link into .git served
    # a hidden file.
    root = tmp_path / "corpus"
    (root / "hr").mkdir(parents=True)
    (root / "public").mkdir()
    (root / ".git").mkdir()
    (root / "hr" / "pay.md").write_bytes(b"# Pay\n\nPriya earns 91000 a year.\n")
    (root / ".git" / "blob").write_bytes(b"a hidden secret\n")
    (root / "public" / "pay.md").symlink_to("../hr/pay.md")
    (root / "gitblob.txt").symlink_to(root / ".git" / "blob")
    (root / os.fsdecode(b"caf\xe9.md")).write_bytes(b"# Caf\n")  # a name that is not UTF-8
    (root / "cafe.md").symlink_to(os.fsdecode(b"caf\xe9.md"))
    result = extract_corpus(root)
    # Every reason is text a table can hold (the link's target is shown escaped).
    reconciliation_table(result.report, "T")
    assert {r.document_id: (r.status, r.error) for r in result.records} == {
        "gitblob.txt": ("skipped", "a symlink into .git, a hidden name: not followed, not part "
                                   "of the corpus"),
        "hr/pay.md": ("ok", None),
        "public/pay.md": ("skipped", "a symlink to hr/pay.md: not followed (that file is read "
                                     "under its own name)"),
        "cafe.md": ("skipped", "a symlink to caf\\xe9.md: not followed (that file is read under "
                               "its own name)"),
        "caf\\xe9.md": ("failed", "the file name is not valid UTF-8 (caf\\xe9.md): rename the "
                                  "file")}
    # What a reader restricted by [access] is told: not where the link points.
    assert {r.document_id: without_link_target(r.error) for r in result.records
            if r.document_id in ("gitblob.txt", "public/pay.md")} == {
        "gitblob.txt": "a symlink into a hidden name: not followed, not part of the corpus",
        "public/pay.md": "a symlink to another file of the corpus: not followed (that file is "
                         "read under its own name)"}


def test_a_file_with_two_names_is_skipped_under_both(tmp_path):
    # Found by an attacker: `ln hr/salaries.md public/notes.md` was indexed as public/notes.md,
    # so an [access] rule for public/** let engineering read HR's file; neither name is its own.
    root = tmp_path / "corpus"
    (root / "hr").mkdir(parents=True)
    (root / "public").mkdir()
    (root / "hr" / "salaries.md").write_bytes(b"# Bands\n\nBand 4 starts at 91000.\n")
    os.link(root / "hr" / "salaries.md", root / "public" / "notes.md")
    (root / "public" / "plain.md").write_bytes(b"# Plain\n")
    reason = ("a hard link (2 names for one file): not read under any of them (another name "
              "may have other [access] readers); copy the file to index it")
    result = extract_corpus(root)
    assert {r.document_id: (r.status, r.error) for r in result.records} == {
        "hr/salaries.md": ("skipped", reason), "public/notes.md": ("skipped", reason),
        "public/plain.md": ("ok", None)}
    linked = stat_fingerprint(root / "hr" / "salaries.md")
    assert linked.endswith(":links=2")
    # The link removed, the file is its one name again: its fingerprint changes, and it is read.
    (root / "public" / "notes.md").unlink()
    alone = stat_fingerprint(root / "hr" / "salaries.md")
    assert alone != linked and ":links=" not in alone
    assert {r.document_id: r.status for r in extract_corpus(root).records} == {
        "hr/salaries.md": "ok", "public/plain.md": "ok"}


def test_symlink_loops_and_special_files_fail_with_their_reasons_unopened(tmp_path, monkeypatch):
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "good.md").write_bytes(b"# Good\n\nBody.\n")
    # Flaw: a link to itself -> "symlink loop" (Python 3.11's resolve() raised RuntimeError).
    (root / "self.md").symlink_to(root / "self.md")
    # Flaw: two links to each other -> "symlink loop" for both.
    (root / "a.md").symlink_to(root / "b.md")
    (root / "b.md").symlink_to(root / "a.md")
    # Flaw: a named pipe with no writer -> reading it would block forever.
    os.mkfifo(root / "pipe.md")
    # Flaw: a link (with a supported suffix) to a pipe without one -> still a pipe.
    os.mkfifo(root / "raw_pipe")
    (root / "to_pipe.txt").symlink_to(root / "raw_pipe")
    # Flaw: a unix socket.
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(root / "sock.md"))
    # Flaw: a link to a target that does not exist.
    (root / "dangling.md").symlink_to(root / "nowhere.md")
    # Flaw: a link to a directory with a supported suffix.
    (root / "folder").mkdir()
    (root / "dir_link.md").symlink_to(root / "folder")
    # Not a flaw: a link back to the root is never walked into (no endless walk).
    (root / "again").symlink_to(root)
    opened: list[str] = []
    real_open = os.open

    def recording_open(path, *args, **kwargs):
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", recording_open)
    try:
        result = extract_corpus(root)
    finally:
        listener.close()
    assert {r.document_id: r.error for r in result.records} == {
        "a.md": "symlink loop: following the link never reaches a file",
        "b.md": "symlink loop: following the link never reaches a file",
        "dangling.md": f"broken symlink: {(root / 'nowhere.md').resolve()} does not exist",
        "dir_link.md": "not a regular file: a directory, never opened",
        "good.md": None,
        "pipe.md": "not a regular file: a named pipe, never opened",
        "self.md": "symlink loop: following the link never reaches a file",
        "sock.md": "not a regular file: a socket, never opened",
        "to_pipe.txt": "not a regular file: a named pipe, never opened",
        # Skipped, never opened: a pipe without a suffix, and the link back to the root.
        "raw_pipe": ("no reader for files named raw_pipe (without a suffix), and not read as text: "
                     "not a regular file: a named pipe, never opened"),
        "again": "a symlink to a directory: not walked into",
    }
    assert opened == [str((root / "good.md").resolve())]


def test_a_device_file_fails_unopened(tmp_path):
    try:
        os.mknod(tmp_path / "null.md", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device file needs CAP_MKNOD")
    record = extract_document(tmp_path / "null.md", tmp_path)
    assert (record.status, record.error) == ("failed", "not a regular file: a character device, never opened")


def test_a_file_over_the_size_limit_fails_unread_and_one_at_it_passes(tmp_path):
    (tmp_path / "big.txt").write_bytes(b"x" * 101)
    (tmp_path / "edge.txt").write_bytes(b"y" * 100)
    result = extract_corpus(tmp_path, settings=ExtractionSettings(max_document_bytes=100))
    records = by_id(result.records)
    assert (records["big.txt"].error, records["big.txt"].content_sha256) == (
        "too large: 101 bytes, over the limit of 100 bytes per document (max_document_bytes)", "")
    assert (records["edge.txt"].status, records["edge.txt"].canonical_text) == ("ok", "y" * 100)
    # Reuse never bypasses the limit: an ok record of big.txt from a larger limit is not reused.
    first = extract_corpus(tmp_path)
    assert [r.status for r in first.records] == ["ok", "ok"]
    again = extract_corpus(tmp_path, first.records, ExtractionSettings(max_document_bytes=100))
    assert ([r.status for r in again.records], again.reused) == (["failed", "ok"], 1)


def test_extraction_settings_reject_a_non_positive_limit():
    with pytest.raises(ValueError, match="max_document_bytes must be positive, got 0"):
        ExtractionSettings(max_document_bytes=0)
    assert ExtractionSettings().max_document_bytes == 20 * 1024 * 1024


def test_a_file_name_that_is_not_utf8_is_one_failed_record(tmp_path: Path):
    from rag_pipeline.core.index.builders import documents_table

    (tmp_path / "good.md").write_text("# Good\n\nFine text.\n", encoding="utf-8")
    # Planted: a name with the byte 0xff (not UTF-8); it used to fail the whole documents run
    # with a UnicodeEncodeError when the table was written.
    with open(os.path.join(os.fsencode(tmp_path), b"bad\xffbytes.md"), "wb") as handle:
        handle.write(b"# Bad\n\nSome text.\n")
    first = extract_corpus(tmp_path)
    records = first.records
    assert [(r.document_id, r.status, r.error) for r in records] == [
        ("bad\\xffbytes.md", "failed",
         "the file name is not valid UTF-8 (bad\\xffbytes.md): rename the file"),
        ("good.md", "ok", None)]
    # The next run finds the same record under its shown id: unchanged, neither added nor deleted.
    again = extract_corpus(tmp_path, records).report
    assert [(r.change, r.document_id) for r in again.rows] == [
        ("failed", "bad\\xffbytes.md"), ("unchanged", "good.md")]
    table = documents_table(records)
    assert table.column("document_id").to_pylist() == ["bad\\xffbytes.md", "good.md"]


def test_a_container_is_reconciled_with_its_members_and_reused_unopened(tmp_path, monkeypatch):
    from rag_pipeline.core.ingest.reconcile import Change
    from rag_pipeline.core.ingest.sources.local import LocalSource

    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.zip").write_bytes(zipped({"x.md": b"# X\n\nOne.\n", "y.md": b"# Y\n\nTwo.\n"}))
    (root / "b.md").write_bytes(b"# B\n\nThree.\n")
    first = extract_corpus(root)
    assert [r.document_id for r in first.records] == ["a.zip", "a.zip/x.md", "a.zip/y.md", "b.md"]
    assert first.report.ids(Change.ADDED) == ["a.zip", "a.zip/x.md", "a.zip/y.md", "b.md"]
    # Unchanged, the archive is not even opened: its records and its members' are kept.
    reads = []
    original = LocalSource.read
    monkeypatch.setattr(LocalSource, "read", lambda self, entry, limit: reads.append(
        entry.document_id) or original(self, entry, limit))
    second = extract_corpus(root, previous=first.records)
    assert (second.extracted, second.reused, reads) == (0, 4, [])
    assert all(new is old for new, old in zip(second.records, first.records, strict=True))
    assert second.report.counts()[Change.DELETED.value] == 0
    assert second.report.counts()[Change.UNCHANGED.value] == 4
    # Deleting the archive deletes its members too, each reported once.
    (root / "a.zip").unlink()
    third = extract_corpus(root, previous=second.records)
    assert [r.document_id for r in third.records] == ["b.md"]
    assert third.report.ids(Change.DELETED) == ["a.zip", "a.zip/x.md", "a.zip/y.md"]


def test_an_archive_read_again_reports_only_what_changed_in_it(tmp_path):
    # Found by a user: a member appended to an archive listed its other members as changed.
    from rag_pipeline.core.ingest.reconcile import Change

    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.zip").write_bytes(zipped({"x.md": b"# X\n\nOne.\n", "y.md": b"# Y\n\nTwo.\n"}))
    first = extract_corpus(root)
    (root / "a.zip").write_bytes(zipped({"x.md": b"# X\n\nOne.\n", "y.md": b"# Y\n\nTwo, edited.\n",
                                          "z.md": b"# Z\n\nThree.\n"}))
    second = extract_corpus(root, previous=first.records)
    assert second.extracted > 0
    assert (second.report.ids(Change.CHANGED), second.report.ids(Change.ADDED),
            second.report.ids(Change.UNCHANGED)) == (["a.zip", "a.zip/y.md"], ["a.zip/z.md"],
                                                      ["a.zip/x.md"])


def test_out_of_memory_fails_only_the_document_that_ran_out(tmp_path, monkeypatch):
    from rag_pipeline.core.ingest.formats.text import TextFormat

    (tmp_path / "bomb.txt").write_text("x\n", encoding="utf-8")
    (tmp_path / "fine.md").write_text("# Fine\n\nStill read.\n", encoding="utf-8")

    def exhausted(self, data, stem):
        raise MemoryError

    monkeypatch.setattr(TextFormat, "extract", exhausted)
    records = by_id(extract_corpus(tmp_path).records)
    assert (records["bomb.txt"].status, records["bomb.txt"].error) == (
        "failed", "out of memory reading this text file: too large to read")
    assert records["fine.md"].status == "ok"


def test_a_renamed_file_titled_by_its_name_is_titled_by_its_new_name_as_a_fresh_read_does(
        tmp_path: Path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "db-note.md").write_text("The database is backed up at 03:00.\n", encoding="utf-8")
    (root / "guide.md").write_text("# Guide\n\nRead the runbook.\n", encoding="utf-8")
    import openpyxl

    book = openpyxl.Workbook()
    book.active.title = "budget"  # a sheet named after its file, as Excel names a saved CSV
    book.active.append(["Item", "Cost"])
    book.active.append(["Tea", 2])
    book.save(root / "budget.xlsx")
    first = extract_corpus(root)
    (root / "db-note.md").rename(root / "database.md")
    (root / "guide.md").rename(root / "handbook.md")
    (root / "budget.xlsx").rename(root / "finance.xlsx")
    second = extract_corpus(root, previous=first.records)
    assert sorted((r.change, r.document_id, r.previous_id) for r in second.report.rows
                  if r.change == "renamed") == [("renamed", "database.md", "db-note.md"),
                                                ("renamed", "finance.xlsx", "budget.xlsx"),
                                                ("renamed", "handbook.md", "guide.md")]
    # Those titled by their names are read again under the new one; the other is moved as it is.
    assert (second.extracted, second.reused) == (2, 1)
    fresh = by_id(extract_corpus(root).records)
    for record in second.records:
        assert (record.title, record.sections) == (fresh[record.document_id].title,
                                                   fresh[record.document_id].sections)
    assert by_id(second.records)["database.md"].sections == (Section("database", 0, 36, 1),)
    assert [s.title for s in by_id(second.records)["finance.xlsx"].sections] == ["budget"]
    assert by_id(second.records)["handbook.md"].title == "Guide"


def _going_away(root: Path, at: int, every_file: bool):
    """A local source of ``root`` whose ``at``-th read first deletes the file it reads, or
    every file (the folder unmounted: its mount point is left, empty)."""
    from rag_pipeline.core.ingest.sources.local import LocalSource

    class GoingAway(LocalSource):
        reads = 0

        def read(self, entry, max_bytes):
            GoingAway.reads += 1
            if GoingAway.reads == at:
                for path in sorted(root.iterdir()) if every_file else [root / entry.document_id]:
                    path.unlink()
            return super().read(entry, max_bytes)

    return GoingAway(root)


def _ten_notes(root: Path) -> None:
    root.mkdir()
    for n in range(10):
        (root / f"note{n}.md").write_text(f"# Note {n}\n\nBackups of site {n} run nightly.\n")


def test_a_file_deleted_while_the_run_reads_it_is_reported_deleted_not_failed(tmp_path):
    # Found by an operator: a file gone when read was recorded failed ("unreadable: No such
    # file or directory") and, unchanged when it came back, never read again.
    root = tmp_path / "corpus"
    _ten_notes(root)
    first = extract_corpus(root)
    for path in root.iterdir():
        os.utime(path, (1, 1))  # every file to be read again
    again = extract_corpus(_going_away(root, at=3, every_file=False), first.records)
    assert [(r.change, r.document_id) for r in again.report.rows if r.change != "unchanged"] == [
        ("deleted", "note2.md")]
    assert sorted(r.document_id for r in again.records) == [
        f"note{n}.md" for n in range(10) if n != 2]


def test_a_corpus_that_goes_away_while_the_run_reads_it_publishes_nothing(tmp_path):
    # Found by an operator: a corpus unmounted mid-run left its mount point, an empty folder,
    # so the run published the files not yet read as failed (77 of 400 man pages), and a wrong
    # answer was served from the others.
    from rag_pipeline.core.ingest.sources import SourceError

    root = tmp_path / "corpus"
    _ten_notes(root)
    first = extract_corpus(root)
    for path in root.iterdir():
        os.utime(path, (1, 1))
    with pytest.raises(SourceError) as gone:
        extract_corpus(_going_away(root, at=4, every_file=True), first.records)
    assert str(gone.value) == (
        f"the corpus {root} went away while it was being read (7 of its files were gone when "
        "read, and it now lists 0 of its 10 entries: unmounted or moved?): nothing is published, "
        "the served index is as it was")
