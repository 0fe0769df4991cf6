"""Tests for ``rag_pipeline.core.ingest.pdf_pages``: an underscore TeX draws as a rule on the
baseline reads as ``_``; rules that are not underscores leave the text alone."""

from __future__ import annotations

import io

import pypdfium2
from fpdf import FPDF

from rag_pipeline.core.ingest.pdf_pages import is_word_gap, page_runs, underscore_rules

BASELINE = 100.0


def _page_with_rules(rules: list[tuple[float, float, float]]) -> bytes:
    """One line "t out is at x" drawn word by word at 11 points (as TeX places them), with
    filled rectangles (x, width, top) of 0.5 points' height."""
    pdf = FPDF(unit="pt")
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    for x, word in ((72.0, "t"), (81.0, "out"), (102.0, "is"), (113.0, "at"), (126.0, "x")):
        pdf.text(x, BASELINE, word)
    for x, width, top in rules:
        pdf.rect(x, top, width, 0.5, style="F")
    return bytes(pdf.output())


def _text(data: bytes) -> list[str]:
    with pypdfium2.PdfDocument(io.BytesIO(data)) as document:
        return [run.text for run in page_runs(document, 0).runs]


def test_a_rule_on_the_baseline_between_two_letters_is_an_underscore():
    # "t" ends near x=75, "out" starts at 81: a 4-point rule in that gap, on the baseline.
    assert _text(_page_with_rules([(76.0, 4.0, BASELINE - 0.2)])) == ["t_out is at x"]


def test_rules_that_are_no_underscore_leave_the_text_alone():
    # Planted flaws, each must not become "_": a rule above the line (an overline, 6 points
    # over the baseline), a 40-point rule under the whole line (too long: a table's rule).
    data = _page_with_rules([(76.0, 4.0, BASELINE - 6.0), (72.0, 40.0, BASELINE + 0.2)])
    assert _text(data) == ["t out is at x"]


def test_only_short_thin_rules_are_candidates():
    data = _page_with_rules([(76.0, 4.0, BASELINE - 0.2), (72.0, 40.0, BASELINE + 3)])
    with pypdfium2.PdfDocument(io.BytesIO(data)) as document:
        page = document[0]
        rules = underscore_rules(page, float(page.get_height()))
    assert [(round(r.x0, 1), round(r.x1, 1)) for r in rules] == [(76.0, 80.0)]



def test_a_word_gap_is_wider_than_three_twentieths_of_the_font_size():
    # bash.pdf (groff through Ghostscript): "they" ends at 273.69, "are" starts at 276.19 at
    # 10 points with no space character between them; letters of one word touch or overlap.
    assert is_word_gap(273.69, 276.19, 10.0)
    assert not is_word_gap(273.69, 275.19, 10.0)
    assert not is_word_gap(268.84, 268.69, 10.0)


def test_words_drawn_apart_read_with_one_space_between_them():
    assert _text(_words_placed_apart(0.25)) == ["they are here"]
    assert _text(_words_placed_apart(0.05)) == ["theyarehere"]


def _words_placed_apart(gap_em: float) -> bytes:
    """"they are here" drawn word by word in 10-point Times, each word ``gap_em`` of the font
    size after the previous one's advance, no space character between them."""
    pdf = FPDF(unit="pt")
    pdf.add_page()
    pdf.set_font("Times", size=10)
    x = 72.0
    for word in ("they", "are", "here"):
        pdf.text(x, BASELINE, word)
        x += pdf.get_string_width(word) + gap_em * 10
    return bytes(pdf.output())


def test_a_run_starting_with_a_raised_mark_lies_on_its_words_baseline():
    # R-ints.pdf (found by a new user's trial): "a node" ends a line's first run and "¹occupies
    # 32 bytes: on a" starts the next, on the raised mark's baseline, 4 points up; the layout
    # put it in a row of its own above its line: "doubly-linked 1 occupies 32 bytes: on a
    # list), ... a node".
    pdf = FPDF(unit="pt")
    pdf.add_page()
    pdf.set_font("Times", size=11)
    pdf.text(72.0, BASELINE, "platform a node")
    pdf.set_font("Times", size=7)
    pdf.text(160.0, BASELINE - 4, "1")
    pdf.set_font("Times", size=11)
    pdf.text(163.0, BASELINE, "occupies 32 bytes")
    with pypdfium2.PdfDocument(io.BytesIO(bytes(pdf.output()))) as document:
        runs = page_runs(document, 0).runs
    assert [(run.text, run.size, round(run.baseline, 1)) for run in runs] == [
        ("platform a node", 11.0, BASELINE), ("1occupies 32 bytes", 11.0, BASELINE)]


def _pdf_with_to_unicode(shown: bytes, mapping: dict[int, str]) -> bytes:
    """One page showing the bytes ``shown`` in Helvetica at 12 points, the font's ``ToUnicode``
    map sending each code of ``mapping`` to its text (UTF-16BE, as a PDF's maps are written)
    and every other printable code to itself."""
    pairs = "".join(f"<{code:02X}> <{text.encode('utf-16-be').hex().upper()}>\n"
                    for code, text in mapping.items())
    cmap = ("/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
            "/CMapName /Adobe-Identity-UCS def /CMapType 2 def\n"
            "1 begincodespacerange <00> <FF> endcodespacerange\n"
            "1 beginbfrange <20> <7E> <0020> endbfrange\n"
            f"{len(mapping)} beginbfchar\n{pairs}endbfchar\n"
            "endcmap CMapName currentdict /CMap defineresource pop end end\n").encode("ascii")
    content = b"BT /F1 12 Tf 20 100 Td (" + shown + b") Tj ET"
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>",
               b"<< /Length %d >>\nstream\n" % len(cmap) + cmap + b"endstream"]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def test_a_character_past_u_ffff_is_one_character_not_two_halves():
    """Found by a new user: a manual's mathematical italic N (U+1D441) came out of PDFium as two
    UTF-16 halves, stored as two U+FFFD ("Given an \ufffd\ufffd-element array")."""
    data = _pdf_with_to_unicode(b"Given an A-element array", {0x41: "\U0001D441"})
    assert _text(data) == ["Given an \U0001D441-element array"]
