"""A held-out folder of every format: one needle per document, read as a run reads a folder.

The folder is written the way other tools write these files (python-pptx, odfpy, nbformat,
the standard library's ``email``, ``zipfile``, ``tarfile``, ``gzip``/``bz2``/``lzma``, Pillow,
python-docx, fpdf2; the EPUB as its zip, OPF spine and XHTML chapters, as ``zip`` builds one),
with a sentence of its own in each document (a mail's attachments and an archive's members
each carry theirs). Beside them, real files from Debian packages where the machine has them
(``README.Debian``, ``changelog.Debian.gz``, ``copyright`` under ``/usr/share/doc``): their
needle is a line of their own text, 6 to 14 words long, that occurs once.

The folder is read by :func:`~rag_pipeline.core.ingest.corpus.extract_corpus`, as ``index``
reads a folder (containers expanded into members), and each record cut by the ``header``
chunker (512 characters). Scored per document: its status, and whether one chunk's
``content`` (white space collapsed) quotes its needle whole. Images are read by OCR: their
needles are a line of a picture, and the issue's bar for them is 0.8 of them quoted whole.

Run: ``python -m rag_pipeline.benchmarks.format_folder [--debian-docs /usr/share/doc]``, or
with the rest in ``python -m rag_pipeline.benchmarks.extraction --made-here-only``.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import io
import json
import lzma
import re
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

from rag_pipeline.benchmarks.made_here import odf_grid
from rag_pipeline.core.chunking.strategies import ChunkingSettings, ChunkingStrategy, chunk_document
from rag_pipeline.core.ingest.corpus import extract_corpus
from rag_pipeline.core.ingest.records import DocumentRecord

TARGET_CHARS = 512
DEBIAN_DOCS = Path("/usr/share/doc")
DEBIAN_NAMES = ("README.Debian", "changelog.Debian.gz", "copyright", "README.gz", "NEWS.Debian.gz")
"""Real files of Debian packages, read from ``/usr/share/doc/<package>/``."""
DEBIAN_FILES = 3
"""Real files taken at most per name of :data:`DEBIAN_NAMES` (the first in path order whose
text yields a needle)."""


def _sentence(subject: str) -> str:
    return f"The {subject} is kept in the held-out folder and found by its own words."


def _pptx() -> bytes:
    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Quarterly review"
    slide.placeholders[1].text_frame.text = _sentence("slide deck's first point")
    slide.notes_slide.notes_text_frame.text = "Speaker notes for the first slide."
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def _odf(kind: str) -> bytes:
    from odf import draw, text
    from odf.opendocument import (
        OpenDocumentPresentation,
        OpenDocumentSpreadsheet,
        OpenDocumentText,
    )

    if kind == "odt":
        document = OpenDocumentText()
        document.text.addElement(text.H(outlinelevel=1, text="Report"))
        document.text.addElement(text.P(text=_sentence("text document's finding")))
    elif kind == "odp":
        document = OpenDocumentPresentation()
        page = draw.Page(name="page1", masterpagename="")
        frame = draw.Frame()
        box = draw.TextBox()
        box.addElement(text.P(text=_sentence("presentation's one slide")))
        frame.addElement(box)
        page.addElement(frame)
        document.presentation.addElement(page)
    else:
        document = OpenDocumentSpreadsheet()
        document.spreadsheet.addElement(odf_grid(
            [("Topic", "Note"), ("Sheet", _sentence("spreadsheet's note"))], "Notes"))
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


def _epub() -> bytes:
    chapter = (f'<html xmlns="http://www.w3.org/1999/xhtml"><head><title>One</title></head><body>'
               f'<h1>One</h1><p>{_sentence("e-book chapter")}</p></body></html>')
    package = ('<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata '
               'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Book</dc:title></metadata>'
               '<manifest><item id="c1" href="one.xhtml" media-type="application/xhtml+xml"/>'
               '</manifest><spine><itemref idref="c1"/></spine></package>')
    container = ('<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
                 '<rootfiles><rootfile full-path="OEBPS/content.opf" '
                 'media-type="application/oebps-package+xml"/></rootfiles></container>')
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        archive.writestr("META-INF/container.xml", container)
        archive.writestr("OEBPS/content.opf", package)
        archive.writestr("OEBPS/one.xhtml", chapter)
    return out.getvalue()


def _ipynb() -> bytes:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell(f"# Analysis\n\n{_sentence('notebook prose')}"),
                      nbformat.v4.new_code_cell("# the gauges, summed\nprint(sum([1, 2]))",
                                                outputs=[nbformat.v4.new_output(
                                                    "stream", name="stdout", text="3\n")])]
    return nbformat.writes(notebook).encode()


def _docx(sentence: str) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Attached", level=1)
    document.add_paragraph(sentence)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _pdf(sentence: str) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, sentence)
    return bytes(pdf.output())


def _message(subject: str, body: str) -> EmailMessage:
    mail = EmailMessage()
    mail["Subject"], mail["From"], mail["To"] = subject, "Ana Li <ana@example.org>", "team@example.org"
    mail["Date"] = "Tue, 01 Dec 2026 09:00:00 +0000"
    mail.set_content(body)
    return mail


def _eml() -> bytes:
    mail = _message("Site report", _sentence("mail's own body"))
    mail.add_attachment(_pdf(_sentence("mailed PDF")), maintype="application", subtype="pdf",
                        filename="report.pdf")
    mail.add_attachment(_docx(_sentence("mailed Word file")), maintype="application",
                        subtype="vnd.openxmlformats-officedocument.wordprocessingml.document",
                        filename="minutes.docx")
    mail.add_attachment(f"# Readings\n\n{_sentence('mailed Markdown note')}\n".encode(),
                        maintype="text", subtype="markdown", filename="readings.md")
    return mail.as_bytes()


def _mbox() -> bytes:
    messages = []
    for n in (1, 2):
        message = _message(f"Note {n}", _sentence(f"mailbox's message {n}"))
        message["Message-ID"] = f"<note-{n}@example.org>"
        messages.append(b"From ana@example.org Tue Dec  1 09:00:00 2026\n" + message.as_bytes() + b"\n")
    return b"".join(messages)


IMAGE_LINES = {"png": "Ship the gauges by Friday", "jpg": "Review the boiler costs",
               "tiff": "Call the porter at six"}


def _image(kind: str) -> bytes:
    from PIL import Image, ImageDraw, ImageFont

    picture = Image.new("L", (1400, 300), 255)
    ImageDraw.Draw(picture).text((60, 100), IMAGE_LINES[kind], fill=0,
                                 font=ImageFont.load_default(size=56))
    out = io.BytesIO()
    picture.save(out, {"png": "PNG", "jpg": "JPEG", "tiff": "TIFF"}[kind], dpi=(300, 300))
    return out.getvalue()


def _xlsx() -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Budget"
    sheet.append(["Item", "Note"])
    sheet.append(["Travel", _sentence("workbook's cell")])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _man() -> bytes:
    return (".TH FOLDERTOOL 1\n.SH NAME\nfoldertool \\- keeps a folder\n.SH DESCRIPTION\n"
            f"{_sentence('manual page')}\n").encode()


def _info() -> bytes:
    return ("This is folder.info, produced by makeinfo.\n\n\x1f\nFile: folder.info,  Node: Top,  "
            "Up: (dir)\n\nFolder\n******\n\n"
            f"{_sentence('Info manual')}\n").encode()


def _zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("exports/one.md", f"# One\n\n{_sentence('zipped Markdown export')}\n")
        archive.writestr("exports/two.html", f"<html><body><p>{_sentence('zipped HTML page')}"
                                             "</p></body></html>")
    return out.getvalue()


def _tar() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, data in (("notes/plan.txt", f"{_sentence('tarred plain text')}\n".encode()),
                           ("notes/guide.rst", f"Guide\n=====\n\n{_sentence('tarred handbook')}\n"
                                               .encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


Writer = Callable[[], bytes]
Needles = dict[str, tuple[str, bool, bool]]
"""Document id -> (needle, is an image, is a real Debian file)."""
FILES: dict[str, tuple[Writer, dict[str, str]]] = {
    "review.pptx": (_pptx, {"review.pptx": _sentence("slide deck's first point")}),
    "book.epub": (_epub, {"book.epub": _sentence("e-book chapter")}),
    "report.odt": (lambda: _odf("odt"), {"report.odt": _sentence("text document's finding")}),
    "deck.odp": (lambda: _odf("odp"), {"deck.odp": _sentence("presentation's one slide")}),
    "notes.ods": (lambda: _odf("ods"), {"notes.ods": _sentence("spreadsheet's note")}),
    "guide.rst": (lambda: f"Guide\n=====\n\n{_sentence('handbook section')}\n\n::\n\n    make all\n"
                  .encode(), {"guide.rst": _sentence("handbook section")}),
    "field.adoc": (lambda: f"= Field Guide\n\n== Safety\n\n{_sentence('AsciiDoc guide')}\n".encode(),
                   {"field.adoc": _sentence("AsciiDoc guide")}),
    "roster.csv": (lambda: f"Name,Note\nAna,{_sentence('CSV row')}\n".encode(),
                   {"roster.csv": _sentence("CSV row")}),
    "budget.xlsx": (_xlsx, {"budget.xlsx": _sentence("workbook's cell")}),
    "talk.vtt": (lambda: f"WEBVTT\n\n00:00:01.000 --> 00:00:05.000\n{_sentence('WebVTT cue')}\n"
                 .encode(), {"talk.vtt": _sentence("WebVTT cue")}),
    "talk.srt": (lambda: f"1\n00:00:01,000 --> 00:00:05,000\n{_sentence('SubRip cue')}\n".encode(),
                 {"talk.srt": _sentence("SubRip cue")}),
    "foldertool.man": (_man, {"foldertool.man": _sentence("manual page")}),
    "folder.info": (_info, {"folder.info": _sentence("Info manual")}),
    "analysis.ipynb": (_ipynb, {"analysis.ipynb": _sentence("notebook prose")}),
    "site.eml": (_eml, {"site.eml": _sentence("mail's own body"),
                        "site.eml/report.pdf": _sentence("mailed PDF"),
                        "site.eml/minutes.docx": _sentence("mailed Word file"),
                        "site.eml/readings.md": _sentence("mailed Markdown note")}),
    "inbox.mbox": (_mbox, {"inbox.mbox/note-1@example.org.eml": _sentence("mailbox's message 1"),
                           "inbox.mbox/note-2@example.org.eml": _sentence("mailbox's message 2")}),
    "board.png": (lambda: _image("png"), {"board.png": IMAGE_LINES["png"]}),
    "photo.jpg": (lambda: _image("jpg"), {"photo.jpg": IMAGE_LINES["jpg"]}),
    "scan.tiff": (lambda: _image("tiff"), {"scan.tiff": IMAGE_LINES["tiff"]}),
    "notes.md.gz": (lambda: gzip.compress(f"# Notes\n\n{_sentence('gzipped note')}\n".encode()),
                    {"notes.md.gz": _sentence("gzipped note")}),
    "log.txt.bz2": (lambda: bz2.compress(f"{_sentence('bzip2 log')}\n".encode()),
                    {"log.txt.bz2": _sentence("bzip2 log")}),
    "page.html.xz": (lambda: lzma.compress(f"<p>{_sentence('xz page')}</p>".encode()),
                     {"page.html.xz": _sentence("xz page")}),
    "exports.zip": (_zip, {"exports.zip/exports/one.md": _sentence("zipped Markdown export"),
                           "exports.zip/exports/two.html": _sentence("zipped HTML page")}),
    "notes.tar.gz": (_tar, {"notes.tar.gz/notes/plan.txt": _sentence("tarred plain text"),
                            "notes.tar.gz/notes/guide.rst": _sentence("tarred handbook")}),
    "INSTALL": (lambda: f"Installation\n\n{_sentence('install file')}\n".encode(),
                {"INSTALL": _sentence("install file")}),
    "README.Debian": (lambda: f"Notes\n-----\n\n{_sentence('packaging readme')}\n".encode(),
                      {"README.Debian": _sentence("packaging readme")}),
    "notes-2024": (lambda: f"{_sentence('suffix-less note')}\n".encode(),
                   {"notes-2024": _sentence("suffix-less note")}),
}
"""File name -> (writer, {document id: needle}): each document the file becomes, with its needle."""


def debian_needle(text: str) -> str | None:
    """A line of ``text`` of 6 to 14 words, with letters, that occurs once in it (white space
    collapsed), from its middle on; None when there is none."""
    collapsed = " ".join(text.split())
    lines = [" ".join(line.split()) for line in text.splitlines()]
    for line in lines[len(lines) // 2:] + lines[:len(lines) // 2]:
        if 6 <= len(line.split()) <= 14 and re.search(r"[A-Za-z]{3}", line) \
                and collapsed.count(line) == 1 and not line.endswith("-"):
            return line
    return None


def debian_files(docs: Path, per_name: int = DEBIAN_FILES) -> dict[str, tuple[bytes, str]]:
    """Real files under ``docs``: for each name of :data:`DEBIAN_NAMES`, the first
    ``per_name`` ``<package>/<name>`` files with a needle, as ``debian/<package>/<name> ->
    (bytes, needle)``."""
    found: dict[str, tuple[bytes, str]] = {}
    if not docs.is_dir():
        return found
    for name in DEBIAN_NAMES:
        taken = 0
        for path in sorted(docs.glob(f"*/{name}")):
            if taken >= per_name:
                break
            if not path.is_file() or path.is_symlink():
                continue
            data = path.read_bytes()
            text = (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8", "replace")
            needle = debian_needle(text)
            if needle is not None:
                found[f"debian/{path.parent.name}/{path.name}"] = (data, needle)
                taken += 1
    return found


@dataclass(frozen=True)
class Planted:
    """One document of the folder and what it scored."""

    document_id: str
    status: str
    error: str | None
    needle: str
    quoted: bool
    image: bool
    real: bool


def write_folder(root: Path, debian: dict[str, tuple[bytes, str]]) -> Needles:
    """Writes every file of :data:`FILES` and ``debian`` under ``root``; returns
    ``document id -> (needle, image, real)``."""
    planted: Needles = {}
    for name, (write, needles) in FILES.items():
        (root / name).write_bytes(write())
        image = name.rsplit(".", 1)[-1] in IMAGE_LINES
        planted.update({document: (needle, image, False) for document, needle in needles.items()})
    for name, (data, needle) in debian.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
        planted[name] = (needle, False, True)
    return planted


def _chunk_contents(record: DocumentRecord) -> list[str]:
    chunks = chunk_document(record.document_id, record.title, record.canonical_text,
                            ChunkingStrategy.HEADER, ChunkingSettings(target_chars=TARGET_CHARS),
                            sections=record.sections, tables=record.tables)
    return [" ".join(chunk.content.split()) for chunk in chunks]


def score_folder(root: Path, planted: Needles) -> tuple[list[Planted], list[DocumentRecord]]:
    """Reads ``root`` as a run does and scores each planted document; also returns the
    records of documents nobody planted (none, when every file became what it should)."""
    records = {record.document_id: record for record in extract_corpus(root).records}
    scored = []
    for document_id, (needle, image, real) in planted.items():
        record = records.get(document_id)
        quoted = record is not None and record.ok and any(
            " ".join(needle.split()) in content for content in _chunk_contents(record))
        scored.append(Planted(document_id, record.status if record else "missing",
                              record.error if record else None, needle, quoted, image, real))
    others = [r for document_id, r in sorted(records.items()) if document_id not in planted]
    return scored, others


def measure(debian_docs: Path | None = DEBIAN_DOCS) -> tuple[list[Planted], list[DocumentRecord]]:
    """Writes the folder in a temporary directory (with real Debian files from
    ``debian_docs``, none when it is None) and scores it."""
    debian = debian_files(debian_docs) if debian_docs is not None else {}
    with tempfile.TemporaryDirectory(prefix="format-folder-") as folder:
        root = Path(folder)
        return score_folder(root, write_folder(root, debian))


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.3f} ({part}/{whole})" if whole else "-"


def folder_tables(scored: Sequence[Planted], others: Sequence[DocumentRecord]) -> str:
    """The per-document table and the summary line, as Markdown."""
    rows = ["| document | status | needle quoted whole by one chunk |", "|---|---|---|"]
    for p in scored:
        status = p.status if p.error is None else f"{p.status}: {p.error}"
        rows.append(f"| `{p.document_id}`{' (Debian)' if p.real else ''} | {status} | "
                    f"{'yes' if p.quoted else 'no'} |")
    made = [p for p in scored if not p.image and not p.real]
    images = [p for p in scored if p.image]
    real = [p for p in scored if p.real]
    unread = [p for p in scored if p.status != "ok"] + [r for r in others if not r.ok]
    summary = (f"needles quoted whole: made here {_share(sum(p.quoted for p in made), len(made))}, "
               f"images {_share(sum(p.quoted for p in images), len(images))}, Debian files "
               f"{_share(sum(p.quoted for p in real), len(real))}; documents not read: {len(unread)}"
               + "".join(f"; `{r.document_id}` {r.status}: {r.error}" for r in others if not r.ok))
    return "\n".join(rows) + "\n\n" + summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_pipeline.benchmarks.format_folder",
                                     description=__doc__.split("\n", 1)[0])
    parser.add_argument("--debian-docs", type=Path, default=DEBIAN_DOCS,
                        help=f"where Debian packages' documentation is (default {DEBIAN_DOCS})")
    parser.add_argument("--json", action="store_true", help="print the scores as JSON lines")
    args = parser.parse_args(argv)
    scored, others = measure(args.debian_docs)
    if args.json:
        for p in scored:
            print(json.dumps(p.__dict__))
    else:
        print(folder_tables(scored, others))
    return 0


__all__ = ["FILES", "Planted", "debian_files", "debian_needle", "folder_tables", "measure",
           "score_folder", "write_folder"]


if __name__ == "__main__":
    sys.exit(main())
