"""PDFs made in the tests with fpdf2: a small manual with every layout feature, and a scan."""

from __future__ import annotations

import io

from fpdf import FPDF

from rag_pipeline_tests.core.ingest.long_tables import SHIFT_HEADERS, shift_rows


class _Manual(FPDF):
    """Running head "Layout Test Manual" at the top of every page, the page number at the foot."""

    def header(self) -> None:
        self.set_font("Helvetica", size=9)
        self.set_xy(10, 8)
        self.cell(100, 5, "Layout Test Manual")

    def footer(self) -> None:
        self.set_font("Helvetica", size=9)
        self.set_xy(100, 285)
        self.cell(10, 5, str(self.page_no()))


def _lines(pdf: FPDF, lines: list[str], x: float = 10, size: float = 11, font: str = "Helvetica") -> None:
    pdf.set_font(font, size=size)
    for line in lines:
        pdf.set_x(x)
        pdf.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")


def _heading(pdf: FPDF, title: str, level: int, size: float) -> None:
    pdf.ln(4)
    pdf.start_section(title, level=level)
    pdf.set_font("Helvetica", style="B", size=size)
    pdf.cell(0, 9, title, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(2)


def manual_pdf(outline: bool = True) -> bytes:
    """Four pages, titled "Layout Test Manual" in the metadata. Page 1: contents (dot
    leaders). Page 2: "Introduction" with a hyphenated line end to join (fac-tor), one to keep
    (non-numeric, written whole later), a paragraph running over the page break and a
    footnote under it. Page 3: the paragraph's end, "Usage" > "Tables" with a three-row
    table. Page 4: "Columns", two columns of three lines."""
    pdf = _Manual()
    pdf.set_title("Layout Test Manual")
    pdf.set_auto_page_break(False)
    pdf.add_page()
    pdf.set_font("Helvetica", style="B", size=16)
    pdf.cell(0, 10, "Contents", new_x="LMARGIN", new_y="NEXT")
    _lines(pdf, ["1 Introduction . . . . . . . . . . . . . . . . 2",
                 "2 Usage . . . . . . . . . . . . . . . . . . . . 3",
                 "2.1 Tables . . . . . . . . . . . . . . . . . . 3",
                 "2.2 Columns . . . . . . . . . . . . . . . . . 3"])
    pdf.add_page()
    start = pdf.start_section if outline else (lambda *a, **k: None)
    pdf.set_y(20)
    pdf.ln(4)
    start("Introduction", level=0)
    pdf.set_font("Helvetica", style="B", size=16)
    pdf.cell(0, 9, "1 Introduction", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(2)
    _lines(pdf, ["The layout reads a page the way a reader does. It joins a fac-",
                 "tor split at a line end and keeps a non-",
                 "numeric hyphen where the text writes non-numeric elsewhere."])
    pdf.ln(5)
    pdf.set_y(260)
    _lines(pdf, ["This last paragraph of the page is not finished at the foot of the",
                 "page and goes on"])
    pdf.set_y(276)
    _lines(pdf, ["1 A footnote in small type."], size=8)
    pdf.add_page()
    pdf.set_y(20)
    _lines(pdf, ["at the top of the next one."])
    pdf.ln(5)
    for title, level, number in (("Usage", 0, "2 Usage"), ("Tables", 1, "2.1 Tables")):
        pdf.ln(4)
        start(title, level=level)
        pdf.set_font("Helvetica", style="B", size=16 if level == 0 else 13)
        pdf.cell(0, 9, number, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)
    pdf.set_font("Helvetica", size=11)
    for row in (("Name", "Size", "Kind"), ("alpha", "12", "letter"), ("beta", "7", "letter")):
        for x, cell in zip((10, 60, 110), row, strict=True):
            pdf.set_x(x)
            pdf.cell(40, 6, cell)
        pdf.ln(6)
    pdf.add_page()
    pdf.set_y(20)
    pdf.ln(4)
    start("Columns", level=1)
    pdf.set_font("Helvetica", style="B", size=13)
    pdf.cell(0, 9, "2.2 Columns", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(2)
    top = pdf.get_y()
    left = ["The left column comes first", "and is read to its end before", "the right column begins."]
    right = ["The right column is read", "after the left one, from its", "top to its foot."]
    for x, lines in ((10, left), (110, right)):
        pdf.set_y(top)
        _lines(pdf, lines, x=x)
    return bytes(pdf.output())


def plain_pdf(pages: list[list[str]], title: str | None = None) -> bytes:
    """A PDF with a real text layer, one 12-point line per string."""
    pdf = FPDF()
    if title:
        pdf.set_title(title)
    pdf.set_font("Helvetica", size=12)
    for lines in pages:
        pdf.add_page()
        for line in lines:
            pdf.cell(text=line, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def scanned_pdf(text_pdf: bytes, dpi: int = 200) -> bytes:
    """``text_pdf``'s pages rasterised by PDFium into an image-only PDF (no text layer)."""
    import pypdfium2

    source = pypdfium2.PdfDocument(text_pdf)
    images = [source[i].render(scale=dpi / 72, grayscale=True).to_pil() for i in range(len(source))]
    out = io.BytesIO()
    images[0].save(out, format="PDF", save_all=True, append_images=images[1:], resolution=float(dpi))
    return out.getvalue()


def empty_pages_pdf(pages: int, side: float) -> bytes:
    """A hand-written PDF of ``pages`` empty pages of ``side`` x ``side`` points: 335 bytes for
    one 100,000-point page (what a hostile file declares), 628 for four 7,800-point ones."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>",
               f"<< /Type /Pages /Kids [{' '.join(f'{3 + i} 0 R' for i in range(pages))}] "
               f"/Count {pages} >>"]
    objects += [f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {side:g} {side:g}] >>"] * pages
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n"
            "%%EOF\n").encode()
    return out


def long_table_pdf(rows: int = 60, headers: tuple[str, ...] = SHIFT_HEADERS,
                   col_widths: tuple[float, ...] | None = None) -> bytes:
    """A heading, a sentence, then a table of ``rows`` rows under ``headers`` (bold, fpdf2's
    default; ``col_widths`` in millimetres, default equal) that runs over onto page 2 (fpdf2
    repeats the header row there), then a closing sentence."""
    pdf = FPDF()
    pdf.add_page()
    pdf.start_section("Shifts")
    pdf.set_font("Helvetica", style="B", size=16)
    pdf.cell(0, 10, "Shifts", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, "Who works where, and for how long, in the spring term.",
                   new_x="LMARGIN", new_y="NEXT")
    with pdf.table(first_row_as_headings=True, col_widths=col_widths, text_align="LEFT") as table:
        header = table.row()
        for name in headers:
            header.cell(name)
        for values in shift_rows(rows):
            row = table.row()
            for value in values:
                row.cell(value)
    pdf.multi_cell(0, 6, "After the table comes more text.", new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def aging_pdf(widths: tuple[float, ...] = (15.5, 24, 17, 16, 12.5),
              header_aligns: str = "LLRRR") -> bytes:
    """An accounts-receivable aging report as finance teams print it: a title, then a bold
    header over 25 rows of an invoice, a customer and three amounts right-aligned in columns
    ``widths`` (millimetres) apart; the header's labels aligned by ``header_aligns`` (the
    amounts' own ``R``, or ``L``: left over right-aligned numbers)."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", style="B", size=18)
    pdf.cell(0, 10, "Aging", align="C", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", style="B", size=9)
    pdf.set_x(66)
    for width, align, text in zip(widths, header_aligns, AGING_HEADERS, strict=True):
        pdf.cell(width, 6, text, align=align)
    pdf.ln()
    pdf.set_font("Helvetica", size=9)
    for values in aging_rows():
        pdf.set_x(66)
        for width, align, text in zip(widths, "LLRRR", values, strict=True):
            pdf.cell(width, 6, text, align=align)
        pdf.ln()
    return bytes(pdf.output())


AGING_HEADERS = ("Invoice", "Customer", "Current", "Over 90", "Total")


def aging_rows() -> list[tuple[str, ...]]:
    return [(f"SI-{1000 + n}", ("Alder Foods", "Birch Motors")[n * 7 % 3 % 2],
             *(("0.00", "12.50")[(n * k) % 3 == 1] for k in (2, 5, 7))) for n in range(25)]
