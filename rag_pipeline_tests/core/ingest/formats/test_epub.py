"""EPUB: chapters in spine order through the HTML reader, sections at their headings, cited by
chapter file and character range; DRM, XXE and broken books fail or read safely."""

from __future__ import annotations

import io
import re
import zipfile

import pytest

from rag_pipeline.core.ingest.extracted import Anchor, ExtractionError
from rag_pipeline.core.ingest.formats.epub import EpubFormat
from rag_pipeline_tests.core.ingest.long_tables import chunked_under_header, shift_rows

EPUB = EpubFormat()

CONTAINER = b"""<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"""


def opf(title: bytes = b"<dc:title>Field  Notes</dc:title>", doctype: bytes = b"") -> bytes:
    return doctype + b"""<package xmlns="http://www.idpf.org/2007/opf" version="3.0">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">""" + title + b"""</metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="c2" href="text/chapter%202.xhtml" media-type="application/xhtml+xml"/>
    <item id="c1" href="text/ch1.xhtml" media-type="application/xhtml+xml"/>
    <item id="css" href="style.css" media-type="text/css"/>
  </manifest>
  <spine><itemref idref="c1"/><itemref idref="css"/><itemref idref="c2"/><itemref idref="gone"/></spine>
</package>"""


CH1 = b"""<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Arrival</title></head>
<body><h1>Arrival</h1><p>We reached the <em>delta</em> at dawn.</p></body></html>"""
CH2 = b"""<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Work</title></head>
<body><h1>Work</h1><p>Gauges first.</p><h2>Gauges</h2><p>Twelve of them.</p></body></html>"""


CHAPTERS = {"OEBPS/text/ch1.xhtml": CH1, "OEBPS/text/chapter 2.xhtml": CH2,
            "OEBPS/nav.xhtml": b"<html><body><nav>Contents</nav></body></html>"}


def book(files: dict[str, bytes] | None = None, package: bytes | None = None) -> bytes:
    """The book of :data:`CHAPTERS` (``files`` instead, when given)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr("META-INF/container.xml", CONTAINER)
        archive.writestr("OEBPS/content.opf", package or opf())
        for name, data in (files if files is not None else CHAPTERS).items():
            archive.writestr(name, data)
    return buffer.getvalue()


TEXT = ("Arrival\n\nWe reached the delta at dawn.\n\n"
        "Work\n\nGauges first.\n\nGauges\n\nTwelve of them.\n")


def test_chapters_in_spine_order_with_sections_and_chapter_anchors():
    extracted = EPUB.extract(book(), "notes")
    assert extracted.canonical_text == TEXT
    assert extracted.title == "Field Notes"
    text = extracted.canonical_text
    assert [(s.title, s.level, text[s.start:s.end]) for s in extracted.sections] == [
        ("Arrival", 1, "\n\nWe reached the delta at dawn."),
        ("Work", 1, "\n\nGauges first.\n\n"),
        ("Gauges", 2, "\n\nTwelve of them."),
    ]
    # The nav document and the stylesheet are not in the spine's text (a stylesheet and an
    # item the manifest lacks in the spine are counted); a space in a file name is
    # percent-encoded in the locator.
    assert extracted.anchors == (Anchor(0, 38, "chapter=OEBPS/text/ch1.xhtml"),
                                 Anchor(40, 84, "chapter=OEBPS/text/chapter%202.xhtml"))
    assert extracted.notes == (("chapters", "2"), ("spine_items_not_xhtml", "2"))


def test_spine_items_that_point_into_a_file_read_that_file_once():
    # As the Debian live-manual's books list most of their chapters (DocBook's generator): an
    # item per place in a file, ``ch1.xhtml#o8``. Each names its file; none is missing.
    package = opf().replace(
        b'<item id="css"', b'<item id="c1o8" href="text/ch1.xhtml#o8" '
                           b'media-type="application/xhtml+xml"/>\n    <item id="css"').replace(
        b'<itemref idref="c2"/>', b'<itemref idref="c1o8"/><itemref idref="c2"/>'
                                  b'<itemref idref="c1o8"/>')
    extracted = EPUB.extract(book(package=package), "notes")
    assert extracted.canonical_text == TEXT
    assert extracted.notes == (("chapters", "2"), ("spine_items_not_xhtml", "2"))


def test_a_chapter_is_titled_by_its_heading_before_its_title_element():
    # Found by a user: <title>Leave</title> and <h1>Leave policy</h1> titled the section "Leave"
    # (an HTML page keeps <title> first; a book's chapter is titled on its page).
    chapter = (b'<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Leave</title></head>'
               b"<body><h1>Leave policy</h1><p>Staff take 25 days a year.</p></body></html>")
    extracted = EPUB.extract(book({"OEBPS/text/ch1.xhtml": chapter}), "handbook")
    assert [(s.title, extracted.canonical_text[s.start:s.end]) for s in extracted.sections] == [
        ("Leave policy", "\n\nStaff take 25 days a year.")]


def test_a_chapter_table_is_declared_where_it_lands_in_the_book_and_keeps_its_header():
    rows = "".join(f"<tr><td>{site}</td><td>{lead}</td><td>{hours}</td></tr>"
                   for site, lead, hours in shift_rows())
    shifts = (f"<html xmlns=\"http://www.w3.org/1999/xhtml\"><body><h1>Work</h1><table><tr>"
              f"<th>Site</th><th>Lead</th><th>Duration</th></tr>{rows}</table></body></html>")
    extracted = EPUB.extract(book({"OEBPS/text/ch1.xhtml": CH1,
                                   "OEBPS/text/chapter 2.xhtml": shifts.encode()}), "notes")
    (table,) = extracted.tables
    canonical = extracted.canonical_text
    # The second chapter starts at 40 ("Arrival" chapter, then a blank line); its table after "Work\n\n".
    assert (table.start, table.header) == (46, "Site\tLead\tDuration")
    assert canonical[table.start:table.header_end] == "Site\tLead\tDuration"
    assert len(table.rows) == 60
    assert canonical[table.rows[59]:table.end] == "Delta flats 60\tTomas Ruiz\t60 hours"
    chunked_under_header("notes.epub", extracted, cell_end="\t")


def test_a_span_cites_its_chapter_and_the_characters_within_it():
    anchors = EPUB.extract(book(), "notes").anchors
    assert EPUB.fragment(anchors, 9, 38) == "#chapter=OEBPS/text/ch1.xhtml&char=9,38"
    assert EPUB.fragment(anchors, 46, 61) == "#chapter=OEBPS/text/chapter%202.xhtml&char=6,21"
    assert EPUB.fragment((), 1, 5) == "#char=1,5"


def test_external_entities_are_never_resolved():
    # Planted: the package's DTD declares an entity reading /etc/hostname; the title uses it.
    doctype = b'<?xml version="1.0"?><!DOCTYPE package [<!ENTITY x SYSTEM "file:///etc/hostname">]>'
    extracted = EPUB.extract(book(package=opf(b"<dc:title>&x;</dc:title>", doctype)), "notes")
    assert extracted.title == "Arrival"  # no title from the entity: the first chapter's heading


def encryption(*uris: str, algorithm: str = "http://www.w3.org/2001/04/xmlenc#aes128-cbc") -> bytes:
    """A ``META-INF/encryption.xml`` listing ``uris`` as encrypted with ``algorithm``."""
    listed = "".join(
        f'<enc:EncryptedData><enc:EncryptionMethod Algorithm="{algorithm}"/><enc:CipherData>'
        f'<enc:CipherReference URI="{uri}"/></enc:CipherData></enc:EncryptedData>' for uri in uris)
    return (b'<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
            b'xmlns:enc="http://www.w3.org/2001/04/xmlenc#">' + listed.encode() + b"</encryption>")


@pytest.mark.parametrize(("files", "reason"), [
    ({"META-INF/encryption.xml": encryption("OEBPS/text/ch1.xhtml")},
     "encrypted EPUB (DRM): 1 of its 2 chapters cannot be read"),
    ({"META-INF/encryption.xml": encryption("/OEBPS/text/chapter%202.xhtml", "OEBPS/text/ch1.xhtml")},
     "encrypted EPUB (DRM): 2 of its 2 chapters cannot be read"),
    ({"META-INF/encryption.xml": b"<encryption"},  # a list that cannot be read locks them all
     "encrypted EPUB (DRM): 2 of its 2 chapters cannot be read"),
])
def test_an_encrypted_book_fails_with_its_reason(files, reason):
    with pytest.raises(ExtractionError, match=f"^{re.escape(reason)}$"):
        EPUB.extract(book({**CHAPTERS, **files}), "drm")


def test_a_book_whose_only_encrypted_files_are_fonts_is_read():
    """Found by a new user: a book listing only its obfuscated font in encryption.xml (IDPF font
    obfuscation, common in books with embedded fonts) failed as DRM, its chapters plain XHTML."""
    obfuscated = {"META-INF/encryption.xml": encryption(
        "OEBPS/fonts/DejaVuSans.ttf", algorithm="http://www.idpf.org/2008/embedding"),
        "OEBPS/fonts/DejaVuSans.ttf": bytes(range(256))}
    assert EPUB.extract(book({**CHAPTERS, **obfuscated}), "notes").canonical_text == EPUB.extract(
        book(), "notes").canonical_text


def test_a_missing_chapter_is_counted_and_a_zip_without_a_container_fails():
    extracted = EPUB.extract(book({"OEBPS/text/ch1.xhtml": CH1}), "notes")
    assert (extracted.canonical_text, extracted.notes) == (
        "Arrival\n\nWe reached the delta at dawn.\n",
        (("chapters", "1"), ("missing_chapters", "1"), ("spine_items_not_xhtml", "2")))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
    with pytest.raises(ExtractionError, match="^unreadable EPUB: no META-INF/container.xml$"):
        EPUB.extract(buffer.getvalue(), "empty")


def test_docbooks_section_headings_title_their_sections_and_an_admonitions_heading_none():
    """Found by a helper on Debian's debmake-doc EPUB: DocBook writes a chapter's sections as
    ``<h1 class="title">5.1. ...</h1>`` and a tip as ``<h3 class="title">Tip</h3>``; every
    passage was labelled by its chapter, or by "Tip" (199 of 782 chunks)."""
    chapter = b"""<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Chapter 5. Basics</title></head>
<body><div class="chapter"><h1 class="title">Chapter 5. Basics</h1><p>Overview.</p>
<div class="section"><h1 class="title">5.1. Packaging workflow</h1><p>Build it.</p>
<div class="tip"><h3 class="title">Tip</h3><p>Use a chroot.</p></div>
<p>Test building and confirming.</p></div>
<div class="section"><h1 class="title">5.2. Package name</h1><p>Pick one.</p></div></div></body></html>"""
    extracted = EPUB.extract(book({"OEBPS/text/ch1.xhtml": chapter}), "notes")
    text = extracted.canonical_text
    assert [(s.title, text[s.start:s.end].strip()) for s in extracted.sections] == [
        ("Chapter 5. Basics", "Overview."),
        ("5.1. Packaging workflow", "Build it.\n\nTip\n\nUse a chroot.\n\nTest building and confirming."),
        ("5.2. Package name", "Pick one.")]
