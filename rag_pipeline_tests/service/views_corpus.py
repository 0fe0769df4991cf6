"""A small team folder of every viewed format, indexed with the hashed stand-in: Markdown, a
three-page PDF, a two-sheet XLSX, HTML with a script to strip, DOCX with headings, a WebVTT
talk, a broken PDF the page must name, and a drawing no format reads."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.embedding.models import TextEmbedder
from rag_pipeline.core.index.partition_build import build_partition
from rag_pipeline.core.index.query_db import publish_query_db
from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.storage.warehouse import Warehouse

PDF_PAGES = (
    ("Annual report", "This report describes the plant and its people during the last year."),
    ("Cooling", "The reactor cooling loop is inspected every nine days by two engineers on duty."),
    ("Outlook", "Next year the plant adds a second turbine hall and a visitor centre."),
)
COOLING_SENTENCE = PDF_PAGES[1][1]
BUDGET_ROWS = [("Item", "Q1", "Q2", "Q3"), ("Salaries", 1200, 1250, 1300),
               ("Travel", 80, 95, 60), ("Turbine maintenance", 430, 410, 445),
               ("Training", 55, 70, 65)]
MARKDOWN = ("# Operations guide\n\n## Shift handover\n\nEvery shift handover is written in the log "
            "book before the outgoing crew leaves the control room.\n\n## Alarms\n\nA red alarm "
            "stops the turbine within four seconds.\n")
HTML = ("<!doctype html><html><head><title>Visitor rules</title><script>alert('x')</script>"
        "</head><body><h1>Visitor rules</h1><p onclick=\"steal()\">Visitors wear a yellow helmet "
        "<em>at all times</em> inside the turbine hall.</p><p>Photography needs written "
        "permission from the site manager.</p><script>document.title='owned'</script></body></html>")
VTT = ("WEBVTT\n\n00:00:01.000 --> 00:00:04.500\nWelcome to the plant safety briefing.\n\n"
       "00:00:04.500 --> 00:00:09.000\nThe assembly point is the north car park.\n\n"
       "00:00:09.000 --> 00:00:13.000\nNever enter the turbine hall without a helmet.\n")


def report_pdf() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("Plant annual report")
    for heading, sentence in PDF_PAGES:
        pdf.add_page()
        pdf.set_font("Helvetica", style="B", size=18)
        pdf.cell(0, 12, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", size=12)
        pdf.multi_cell(0, 7, sentence)
    return bytes(pdf.output())


def budget_xlsx() -> bytes:
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Budget 2026"
    for row in BUDGET_ROWS:
        sheet.append(list(row))
    notes = workbook.create_sheet("Notes")
    notes.append(["Figures in thousands of euros, approved by the board in November."])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def manual_docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Maintenance manual", level=1)
    document.add_paragraph("Read the whole manual before the first shift.")
    document.add_heading("Oil changes", level=2)
    document.add_paragraph("The turbine oil is changed every two thousand operating hours.")
    document.sections[0].footer.paragraphs[0].text = "Turbine hotline: call 0800 555 0199 at any hour."
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


FILES: dict[str, bytes] = {
    "guide.md": MARKDOWN.encode(),
    "report.pdf": report_pdf(),
    "budget.xlsx": budget_xlsx(),
    "visitors.html": HTML.encode(),
    "manual.docx": manual_docx(),
    "briefing.vtt": VTT.encode(),
    # Planted flaw: not a PDF at all; the page must name it with its reason.
    "broken.pdf": b"%PDF-1.7\nthis file was truncated in transit\n",
    # No format reads it: skipped, and named as such.
    "floor-plan.vsdx": b"PK\x03\x04 a Visio drawing",
}


@dataclass(frozen=True)
class ViewsIndex:
    data_dir: Path
    corpus_dir: Path
    canonical: dict[str, str]


def build_views_index(root: Path, embedder: TextEmbedder) -> ViewsIndex:
    corpus = root / "corpus"
    for name, data in FILES.items():
        (corpus / name).parent.mkdir(parents=True, exist_ok=True)
        (corpus / name).write_bytes(data)
    data_dir = root / "data"
    records = extract_corpus(corpus).records
    build_partition(Warehouse(data_dir), records, ChunkingStrategy.HEADER, embedder)
    publish_query_db(Warehouse(data_dir))
    return ViewsIndex(data_dir, corpus, {r.document_id: r.canonical_text for r in records if r.ok})
