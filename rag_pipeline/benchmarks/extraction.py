"""PDF extraction on twin corpora: manuals Debian ships both as PDF and as HTML.

Run: ``nice -n 10 .venv/bin/python -m rag_pipeline.benchmarks.extraction [--cache DIR]``.

The packages (``bash-doc``: the Bash reference manual; ``octave-doc``: the Octave manual
and its C++ library's) are fetched with ``apt-get download`` and unpacked
with ``dpkg -x`` into ``--cache`` (default ``/tmp/rag_pipeline_twins``) when they are not there.
For each twin:

- **Needles** are sentences of the HTML twin's paragraphs (6 to 60 words, ending a sentence)
  that occur exactly once in its whole text; a needle counts for a PDF reader only where the
  PDF says the same words (its letters and digits, case folded, are in poppler's
  ``pdftotext`` text of the PDF with everything else removed).
- Three readers of the same PDF side by side: this pipeline (PDFium layout, sections from the
  outline), poppler's ``pdftotext`` and plain ``pypdf`` (the project's extractor before this
  one: pages joined by blank lines). Each text is cut by the ``header`` chunker
  (:func:`rag_pipeline.core.chunking.strategies.chunk_document`, 512 characters) within its sections:
  the layout's, or one per page for the two anchors, so that no chunk spans two pages.
- Printed per reader: chunks; needles quoted whole by one chunk (white space collapsed) and
  held anywhere in the whole text; chunks holding a running head (a first or last line of a
  ``pdftotext`` page carrying that page's number, whose digit-normalised form repeats on 3 or
  more pages: :func:`running_heads`); chunks labelled with a section title other than the
  document's; OCR pages and their mean confidence.
- The **HTML twin** read two ways, each file cut by the same chunker within its sections: this
  pipeline's HTML format (:mod:`rag_pipeline.core.ingest.formats.html`) and, as the anchor,
  BeautifulSoup's ``get_text(" ")`` of the whole page (a space at every element boundary,
  navigation kept: the project's HTML reading before issue 18). Printed per reader: chunks,
  needles quoted whole by one chunk, and chunks that are navigation (holding a Texinfo panel's
  "Next:", "Previous:", "Up:", "[Contents]" or "[Index]": :data:`NAVIGATION`).
- A **summary** table, one row per twin, with the figures the issue sets targets for.
- The line-end hyphen rule against the HTML: of the breaks where the HTML writes exactly one
  of the two forms (``factor`` or ``non-numeric``), how many the rule, always joining and
  always keeping the hyphen get right.
- A **scanned twin**: pages of ``bashref.pdf`` rasterised by ``pdftoppm`` into an image-only
  PDF, read through OCR, against the same pages of the text PDF, with each page's confidence,
  the seconds a page a core (wall clock x workers / pages, with the load average) and the CPU
  seconds a page (rendering and Tesseract); at each ``--scan-dpi`` (300, what an office
  scanner makes of a page of text, and a harsher 200 by default).
- **Made-here corpora** first (:mod:`rag_pipeline.benchmarks.made_here`, no download): a long
  table per format, scored by the share of rows whose chunk names every column header, and
  needles per format, and a held-out folder of every format read as a run reads it
  (:mod:`rag_pipeline.benchmarks.format_folder`); ``--made-here-only`` stops after them.

Some 530 lines in one module because it is one benchmark whose tables share their needles,
their chunker call and their scoring (:func:`score`, :func:`eligible`): split, each part would
re-read the twins or import the others' halves. The extraction itself is product code in
:mod:`rag_pipeline.core.ingest`; only the measuring is here.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rag_pipeline.benchmarks.format_folder import folder_tables
from rag_pipeline.benchmarks.format_folder import measure as measure_folder
from rag_pipeline.benchmarks.made_here import (
    HEADERS,
    LONG_TABLE_WRITERS,
    NEEDLE_CORPORA,
    needle_share,
    table_header_share,
)
from rag_pipeline.core.chunking.strategies import ChunkingSettings, ChunkingStrategy, chunk_document
from rag_pipeline.core.ingest.extracted import Section, TableSpan
from rag_pipeline.core.ingest.pdf_extract import PdfReading, read_pdf
from rag_pipeline.core.ingest.pdf_layout import HyphenBreak
from rag_pipeline.core.ingest.pdf_ocr import OcrSettings, default_workers
from rag_pipeline.core.text.markdown_table import markdown_table

DEFAULT_CACHE = Path("/tmp/rag_pipeline_twins")
TARGET_CHARS = 512


@dataclass(frozen=True)
class Twin:
    """A manual shipped as PDF and HTML by one Debian package.

    Attributes:
        name: The twin's label.
        package: The Debian package holding both.
        pdf: The PDF's path inside the package.
        html: The HTML file's path, or a folder whose ``*.html`` files together are the manual.
    """

    name: str
    package: str
    pdf: str
    html: str


TWINS = (
    Twin("bashref", "bash-doc", "usr/share/doc/bash/bashref.pdf", "usr/share/doc/bash/bashref.html"),
    Twin("liboctave", "octave-doc", "usr/share/doc/octave/liboctave.pdf",
         "usr/share/doc/octave/liboctave.html"),
    Twin("octave", "octave-doc", "usr/share/doc/octave/octave.pdf", "usr/share/doc/octave/octave.html"),
)


@dataclass(frozen=True)
class ChunkedText:
    """One reader's text of a PDF cut into chunks: (label, content) pairs."""

    reader: str
    title: str
    text: str
    chunks: tuple[tuple[str, str], ...]
    ocr_pages: int = 0
    ocr_confidence: float | None = None


@dataclass(frozen=True)
class HtmlRow:
    reader: str
    chunks: int
    needles: int
    quoted: int
    navigation: int


@dataclass(frozen=True)
class TwinSummary:
    """The figures of one twin that the issue sets targets for."""

    twin: str
    pages: int
    html: HtmlRow
    pdf_needles_excluded: int
    pdf: tuple[Row, ...]


@dataclass(frozen=True)
class Row:
    reader: str
    chunks: int
    needles: int
    quoted: int
    in_text: int
    with_heads: int
    labelled: int
    ocr_pages: int
    ocr_confidence: float | None


def package_root(cache: Path, package: str) -> Path:
    """The unpacked package folder, downloaded and unpacked first when missing.

    Raises:
        SystemExit: ``apt-get`` or ``dpkg`` is missing or fails.
    """
    root = cache / package
    if (root / "usr").is_dir():
        return root
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    for tool in ("apt-get", "dpkg"):
        if shutil.which(tool) is None:
            raise SystemExit(f"error: {tool} is not installed; it is needed to fetch {package}")
    found = sorted(debs.glob(f"{package}_*.deb"))
    if not found:
        done = subprocess.run(["apt-get", "download", package], cwd=debs, capture_output=True, text=True,
                              timeout=600, check=False)
        found = sorted(debs.glob(f"{package}_*.deb"))
        if done.returncode != 0 or not found:
            raise SystemExit(f"error: apt-get download {package} failed: {done.stderr.strip()[-300:]}")
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg", "-x", str(found[-1]), str(root)], check=True, timeout=600)
    return root


def collapse(text: str) -> str:
    return " ".join(text.split())


def squash(text: str) -> str:
    """Letters and digits only, case folded: the words, whatever the spacing and hyphens."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z‘“(])")


def html_files(root: Path, html: str) -> list[Path]:
    path = root / html
    return sorted(path.glob("*.html")) if path.is_dir() else [path]


def html_text_and_needles(files: Sequence[Path]) -> tuple[str, list[str]]:
    """The HTML twin's whole text and its needles (sentences of ``<p>``, ``<dd>`` and ``<li>``
    blocks holding no other block, 6 to 60 words, occurring once in the whole text)."""
    from bs4 import BeautifulSoup

    whole: list[str] = []
    sentences: list[str] = []
    for file in files:
        soup = BeautifulSoup(file.read_bytes(), "lxml")
        for tag in soup(["script", "style", "head"]):
            tag.decompose()
        whole.append(collapse(soup.get_text()))
        for block in soup.find_all(["p", "dd", "li"]):
            if block.find(["p", "dd", "li", "pre", "table", "dl", "ul", "ol"]):
                continue
            for sentence in _SENTENCE_SPLIT.split(collapse(block.get_text())):
                words = sentence.split()
                if 6 <= len(words) <= 60 and sentence[-1] in ".!?":
                    sentences.append(sentence)
    text = "\n".join(whole)
    counts = Counter(sentences)
    needles = [s for s, n in counts.items() if n == 1 and text.count(s) == 1]
    return text, needles


NAVIGATION = re.compile(r"\b(?:Next|Previous|Up): |\[(?:Contents|Index)\]")
"""What a Texinfo navigation panel prints ("Next: Basic Usage, Previous: Overview, Up: Top
[Contents][Index]"): a chunk holding any of it is navigation."""


def chunk_sections(text: str, sections: Sequence[Section], title: str,
                   tables: Sequence[TableSpan] = ()) -> tuple[tuple[str, str], ...]:
    """The project's ``header`` chunker over the text's sections (long ``tables`` cut between
    rows), as (section title, content)."""
    chunks = chunk_document("twin", title, text, ChunkingStrategy.HEADER,
                            ChunkingSettings(target_chars=TARGET_CHARS), sections=sections,
                            tables=tables)
    return tuple((chunk.section, chunk.content) for chunk in chunks)


def pages_as_text(pages: Sequence[str]) -> tuple[str, tuple[Section, ...]]:
    """Pages joined by blank lines (the pre-layout extractor), one section per page so that
    no chunk spans two pages, all titled by the document."""
    parts, sections, offset = [], [], 0
    for page in pages:
        body = page.strip("\n")
        sections.append(Section("", offset, offset + len(body)))
        parts.append(body)
        offset += len(body) + 2
    return "\n\n".join(parts) + "\n", tuple(sections)


def html_chunked(files: Sequence[Path]) -> tuple[list[str], list[str]]:
    """(the pipeline's chunks, the naive reading's chunks) of the HTML twin's files, as text."""
    from bs4 import BeautifulSoup

    from rag_pipeline.core.ingest.formats import format_named

    html = format_named("html")
    ours: list[str] = []
    naive: list[str] = []
    for file in files:
        data = file.read_bytes()
        extracted = html.extract(data, file.stem)
        ours += [content for _, content in chunk_sections(extracted.canonical_text, extracted.sections,
                                                           extracted.title, extracted.tables)]
        soup = BeautifulSoup(data, "lxml")
        for tag in soup(["script", "style", "head"]):
            tag.decompose()
        text = "\n\n".join(line.strip() for line in soup.get_text(" ").split("\n") if line.strip())
        naive += [content for _, content in chunk_sections(text, (), file.stem)]
    return ours, naive


def html_score(reader: str, contents: Sequence[str], needles: Sequence[str]) -> HtmlRow:
    collapsed = [collapse(content) for content in contents]
    joined = "\0".join(collapsed)
    return HtmlRow(reader, len(collapsed), len(needles), sum(1 for needle in needles if needle in joined),
                   sum(1 for content in collapsed if NAVIGATION.search(content)))


def html_table(rows: Sequence[HtmlRow]) -> str:
    return markdown_table(["reader", "chunks", "needles quoted whole by one chunk", "navigation chunks"],
                          [[r.reader, r.chunks, share(r.quoted, r.needles), share(r.navigation, r.chunks)]
                           for r in rows])


def pdftotext_pages(pdf: Path) -> list[str]:
    done = subprocess.run(["pdftotext", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, check=True,
                          timeout=600)
    pages = done.stdout.decode("utf-8", "replace").split("\f")
    return pages[:-1] if pages and not pages[-1].strip() else pages


def baseline(reader: str, pages: Sequence[str], title: str) -> ChunkedText:
    text, sections = pages_as_text(pages)
    chunks = chunk_sections(text, [Section(title, s.start, s.end) for s in sections], title)
    return ChunkedText(reader, title, text, chunks)


def pypdf_pages(pdf: Path) -> list[str]:
    from pypdf import PdfReader

    return [(page.extract_text() or "").replace("\r\n", "\n") for page in PdfReader(pdf).pages]


def pipeline(reading: PdfReading, reader: str = "pipeline (pdfium layout)") -> ChunkedText:
    layout = reading.layout
    return ChunkedText(reader, layout.title, layout.canonical_text,
                       chunk_sections(layout.canonical_text, layout.sections, layout.title,
                                      layout.tables),
                       len(reading.ocr_pages), reading.mean_ocr_confidence)


def running_heads(pages: Sequence[str]) -> set[str]:
    """The running heads and feet ``pdftotext`` prints: a page's first or last line (or the
    line of letters next to a line holding only a number, as it prints "Bash Reference
    Manual" and "16") whose digit-normalised form repeats on 3 or more pages and which
    carries the page's own number (its number minus the page's index is the offset most such
    lines share: a cross-reference ending a page, "page 492.", is not a head)."""
    candidates: list[tuple[int, str]] = []
    for index, page in enumerate(pages):
        lines = [collapse(line) for line in page.splitlines() if line.strip()]
        if not lines:
            continue
        found = {lines[0], lines[-1]}
        if len(lines) >= 2 and lines[1].isdigit():
            found.add(f"{lines[0]} {lines[1]}")
        if len(lines) >= 2 and lines[-2].isdigit():
            found.add(f"{lines[-2]} {lines[-1]}")
        candidates.extend((index, line) for line in found
                          if re.search(r"\d", line) and re.search(r"[A-Za-z]{3}", line))
    shapes = Counter(re.sub(r"\d+", "#", line) for _, line in candidates)
    offsets = Counter(int(number) - index for index, line in candidates
                      for number in re.findall(r"\d+", line))
    if not offsets:
        return set()
    offset = offsets.most_common(1)[0][0]
    return {line for index, line in candidates
            if shapes[re.sub(r"\d+", "#", line)] >= 3 and str(index + offset) in re.findall(r"\d+", line)}


def score(chunked: ChunkedText, needles: Sequence[str], heads: set[str]) -> Row:
    contents = [collapse(content) for _, content in chunked.chunks]
    whole = collapse(chunked.text)
    # A needle (no NUL in it) found in the NUL-joined contents lies inside one chunk.
    joined = "\0".join(contents)
    quoted = sum(1 for needle in needles if needle in joined)
    in_text = sum(1 for needle in needles if needle in whole)
    with_heads = sum(1 for content in contents if any(head in content for head in heads))
    labelled = sum(1 for label, _ in chunked.chunks if label and label != chunked.title)
    return Row(chunked.reader, len(contents), len(needles), quoted, in_text, with_heads, labelled,
               chunked.ocr_pages, chunked.ocr_confidence)


def share(part: int, whole: int) -> str:
    return f"{part / whole:.3f} ({part}/{whole})" if whole else "-"


def rows_table(rows: Sequence[Row]) -> str:
    return markdown_table(
        ["reader", "chunks", "needles quoted whole by one chunk", "needles in whole text",
         "chunks with running heads", "chunks labelled with a section", "OCR pages", "mean OCR conf."],
        [[r.reader, r.chunks, share(r.quoted, r.needles), share(r.in_text, r.needles),
          share(r.with_heads, r.chunks), share(r.labelled, r.chunks), r.ocr_pages,
          "-" if r.ocr_confidence is None else f"{r.ocr_confidence:.1f}"] for r in rows])


def hyphen_table(breaks: Sequence[HyphenBreak], html_text: str) -> str:
    words = Counter(w.casefold() for w in re.findall(r"[A-Za-z]+(?:-[A-Za-z]+)*", html_text))
    decided = rule = join = keep = 0
    for brk in breaks:
        joined_in = words[brk.joined.casefold()] > 0
        hyphen_in = words[brk.hyphenated.casefold()] > 0
        if joined_in == hyphen_in:
            continue
        decided += 1
        rule += brk.kept == hyphen_in
        join += joined_in
        keep += hyphen_in
    return markdown_table(["line-end hyphen breaks", "HTML writes one form", "rule right",
                           "always join right", "always keep right"],
                          [[len(breaks), decided, share(rule, decided), share(join, decided),
                            share(keep, decided)]])


def eligible(needles: Sequence[str], pages: Sequence[str]) -> list[str]:
    """The needles the PDF says in the same words: the needle's letters and digits (case
    folded) occur in ``pdftotext``'s text with letters and digits only, starting at a word's
    start, and the PDF ends the sentence there: the mark ending the needle (``.``, ``!``,
    ``?``) comes before the PDF's next letter or digit. The squashed text alone would admit a
    needle the PDF goes on from in other words: "see bar." inside "see [bar], page 321." (a
    cross-reference the PDF prints with its page), "by ‘-|’." inside "by ‘ a ’." (a symbol
    the PDF's text layer reads as a letter)."""
    raw = "".join(pages)
    letters: list[str] = []
    where: list[int] = []  # where[k]: the index in ``raw`` of the squashed text's k-th character
    for i, ch in enumerate(raw):
        for folded in ch.casefold():
            if folded.isalnum():
                letters.append(folded)
                where.append(i)
    reference = "".join(letters)
    kept = []
    for needle in needles:
        wanted = squash(needle)
        found = reference.find(wanted) if wanted else -1
        while found >= 0:
            first, stop = where[found], found + len(wanted)
            following = where[stop] if stop < len(where) else len(raw)
            starts_word = first == 0 or not raw[first - 1].isalnum()
            if starts_word and needle[-1] in raw[where[stop - 1] + 1:following]:
                kept.append(needle)
                break
            found = reference.find(wanted, found + 1)
    return kept


def compare_twin(twin: Twin, root: Path, settings: OcrSettings) -> TwinSummary:
    pdf = root / twin.pdf
    files = html_files(root, twin.html)
    html_text, needles = html_text_and_needles(files)
    poppler = pdftotext_pages(pdf)
    reference = squash("".join(poppler))
    squashed = [needle for needle in needles if squash(needle) in reference]
    pdf_needles = eligible(needles, poppler)
    heads = running_heads(poppler)
    started = time.perf_counter()
    reading = read_pdf(pdf.read_bytes(), pdf.stem, settings)
    seconds = time.perf_counter() - started
    layout = reading.layout
    print(f"\n## {twin.name}: {pdf.name} ({len(reading.pages)} pages, read in {seconds:.1f} s) "
          f"against {len(files)} HTML file(s)\n")
    print(f"HTML needles {len(needles)}; their letters and digits are in the PDF's: {len(squashed)}, "
          f"of which the PDF goes on in other words (excluded): {len(squashed) - len(pdf_needles)}; "
          f"PDF needles: {len(pdf_needles)}; "
          f"running heads found by pdftotext: {len(heads)}; layout dropped {layout.dropped_lines} "
          f"lines, {len(layout.toc_pages)} contents/index pages, {layout.footnotes} footnotes; "
          f"sections from the {layout.sections_from}: {len(layout.sections)}\n")
    title = layout.title
    rows = (score(pipeline(reading), pdf_needles, heads),
            score(baseline("pdftotext (poppler)", poppler, title), pdf_needles, heads),
            score(baseline("pypdf", pypdf_pages(pdf), title), pdf_needles, heads))
    print(rows_table(rows))
    print()
    print(hyphen_table(layout.hyphen_breaks, html_text))
    ours, naive = html_chunked(files)
    html_rows = (html_score("pipeline (HTML format)", ours, needles),
                 html_score('BeautifulSoup get_text(" ")', naive, needles))
    print(f"\nHTML twin ({len(files)} file(s)), all {len(needles)} needles\n")
    print(html_table(html_rows))
    return TwinSummary(twin.name, len(reading.pages), html_rows[0], len(squashed) - len(pdf_needles), rows)


def image_only_pdf(pdf: Path, first: int, count: int, dpi: int, work: Path) -> tuple[bytes, bytes]:
    """(image-only PDF of pages ``first..first+count-1`` rasterised by ``pdftoppm``, the same
    pages of the text PDF)."""
    import pypdfium2
    from PIL import Image

    subprocess.run(["pdftoppm", "-r", str(dpi), "-gray", "-png", "-f", str(first), "-l",
                    str(first + count - 1), str(pdf), str(work / "page")], check=True, timeout=1200)
    images = [Image.open(path) for path in sorted(work.glob("page-*.png"))]
    scanned = io.BytesIO()
    images[0].save(scanned, format="PDF", save_all=True, append_images=images[1:], resolution=float(dpi))
    source = pypdfium2.PdfDocument(pdf)
    cut = pypdfium2.PdfDocument.new()
    cut.import_pages(source, list(range(first - 1, first - 1 + count)))
    text = io.BytesIO()
    cut.save(text)
    return scanned.getvalue(), text.getvalue()


def summary_table(summaries: Sequence[TwinSummary]) -> str:
    """One row per twin: HTML needles quoted and navigation share; PDF needles quoted for
    pipeline / pdftotext / pypdf, running heads and labelled chunks of the pipeline."""
    rows = []
    for summary in summaries:
        ours = summary.pdf[0]
        pdf = " / ".join(f"{row.quoted / row.needles:.3f}" if row.needles else "-" for row in summary.pdf)
        rows.append([summary.twin, summary.pages, share(summary.html.quoted, summary.html.needles),
                     share(summary.html.navigation, summary.html.chunks),
                     f"{pdf} (of {ours.needles}; {summary.pdf_needles_excluded} excluded)",
                     share(ours.with_heads, ours.chunks), share(ours.labelled, ours.chunks)])
    return markdown_table(["twin", "PDF pages", "HTML needles quoted whole", "HTML navigation chunks",
                           "PDF needles quoted whole (pipeline / pdftotext / pypdf)",
                           "PDF chunks with running heads", "PDF chunks labelled"], rows)


@dataclass(frozen=True)
class ScannedRow:
    """The scanned twin at one scan resolution."""

    dpi: int
    ratio: float
    confidence: float | None
    page_core_seconds: float
    load: tuple[float, float]


def compare_scanned(twin: Twin, root: Path, first: int, count: int, dpis: Sequence[int],
                    settings: OcrSettings) -> list[ScannedRow]:
    """The text PDF's pages against the same pages scanned at each of ``dpis`` (``pdftoppm``)."""
    pdf = root / twin.pdf
    _, needles = html_text_and_needles(html_files(root, twin.html))
    workers = settings.workers or default_workers()
    rows: list[ScannedRow] = []
    text_row = None
    for dpi in dpis:
        with tempfile.TemporaryDirectory() as tmp:
            scanned, text_pdf = image_only_pdf(pdf, first, count, dpi, Path(tmp))
            if text_row is None:
                cut_path = Path(tmp) / "cut.pdf"
                cut_path.write_bytes(text_pdf)
                poppler = pdftotext_pages(cut_path)
                pdf_needles = eligible(needles, poppler)
                heads = running_heads(poppler)
                text_reading = read_pdf(text_pdf, pdf.stem, settings)
                text_row = score(pipeline(text_reading, "pipeline, text PDF"), pdf_needles, heads)
        load_before = os.getloadavg()[0]
        started, cpu_started = time.perf_counter(), _cpu_seconds()
        scan_reading = read_pdf(scanned, pdf.stem, settings)
        seconds, cpu = time.perf_counter() - started, _cpu_seconds() - cpu_started
        load = (load_before, os.getloadavg()[0])
        per_core = seconds * workers / count
        print(f"\n## scanned twin: {twin.name} pages {first}-{first + count - 1} scanned at {dpi} dpi "
              f"(image-only PDF), OCR'd at {settings.dpi} dpi\n")
        print(f"{seconds:.0f} s wall clock for {count} pages, {workers} page(s) at once: "
              f"{per_core:.2f} s a page a core (wall seconds x {workers} workers / {count} pages), "
              f"{cpu / count:.2f} CPU s a page (rendering and Tesseract); load average "
              f"{load[0]:.1f} at the start, {load[1]:.1f} at the end on {os.cpu_count()} cores\n")
        scan_row = score(pipeline(scan_reading, "pipeline, scanned PDF (OCR)"), pdf_needles, heads)
        print(rows_table([text_row, scan_row]))
        ratio = scan_row.quoted / text_row.quoted if text_row.quoted else 0.0
        print(f"\nscanned / text needles quoted whole: {ratio:.3f}; pages under the confidence floor "
              f"({settings.confidence_floor:g}): {list(scan_reading.low_confidence_pages) or 'none'}\n")
        print(markdown_table(["page", "source", "OCR confidence", "chars"],
                             [[p.page, p.source, _confidence(p.ocr_confidence), p.chars]
                              for p in scan_reading.pages]))
        rows.append(ScannedRow(dpi, ratio, scan_reading.mean_ocr_confidence, per_core, load))
    return rows


def _confidence(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (Tesseract)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def made_here_tables(rows: int) -> str:
    """The made-here corpora: long tables per format (rows whose chunk names every column
    header, with the format's table declarations and without) and needles per format."""
    tables = [table_header_share(fmt, rows) for fmt in LONG_TABLE_WRITERS]
    needles = [needle_share(fmt) for fmt in NEEDLE_CORPORA]
    return "\n\n".join([
        f"## Made here: a {rows}-row table per format ({', '.join(HEADERS)}), 512-character "
        "header chunks",
        markdown_table(["format", "tables declared", "chunks", "rows whose chunk names every header",
                        "same, tables not declared to the chunker"],
                       [[t.format, t.tables, t.chunks, share(t.named, t.rows),
                         share(t.named_undeclared, t.rows)] for t in tables]),
        "## Made here: needles per format",
        markdown_table(["format", "needles quoted whole by one chunk"],
                       [[n.format, share(n.quoted, n.needles)] for n in needles]),
        "## Made here: a held-out folder of every format, one needle per document, read as a "
        "run reads a folder (real Debian files from /usr/share/doc beside them)",
        folder_tables(*measure_folder())])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_pipeline.benchmarks.extraction",
                                     description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help=f"where the Debian packages are unpacked (default {DEFAULT_CACHE})")
    parser.add_argument("--scan-first", type=int, default=7, help="first page of the scanned twin (1-based)")
    parser.add_argument("--scan-pages", type=int, default=30,
                        help="pages in the scanned twin, the OCR bound (default 30; 0 skips it)")
    parser.add_argument("--scan-dpi", type=int, nargs="+", default=[300, 200],
                        help="resolution(s) the scanned twin's pages are scanned at (default 300 "
                             "200: a 300 dpi scan, as an office scanner makes, and a harsher 200)")
    parser.add_argument("--ocr-dpi", type=int, default=OcrSettings.dpi,
                        help=f"resolution scanned pages are rendered at for OCR (default {OcrSettings.dpi})")
    parser.add_argument("--psm", type=int, default=OcrSettings.page_segmentation,
                        help="Tesseract's page segmentation mode (default "
                             f"{OcrSettings.page_segmentation})")
    parser.add_argument("--twins", nargs="*", default=[t.name for t in TWINS],
                        help="twins to run (default all)")
    parser.add_argument("--table-rows", type=int, default=60,
                        help="rows of the made-here long tables (default 60)")
    parser.add_argument("--made-here-only", action="store_true",
                        help="only the made-here corpora (tables, needles per format): no downloads")
    args = parser.parse_args(argv)
    print(made_here_tables(args.table_rows))
    if args.made_here_only:
        return 0
    unknown = sorted(set(args.twins) - {t.name for t in TWINS})
    if unknown:
        print(f"error: unknown twin(s) {', '.join(unknown)}; known: {', '.join(t.name for t in TWINS)}",
              file=sys.stderr)
        return 2
    if args.scan_pages < 0 or args.scan_first < 1 or not all(50 <= d <= 1200 for d in args.scan_dpi):
        print("error: --scan-pages must be >= 0, --scan-first >= 1, --scan-dpi in [50, 1200]",
              file=sys.stderr)
        return 2
    for tool in ("pdftotext", "pdftoppm"):
        if shutil.which(tool) is None:
            print(f"error: {tool} is not installed (apt-get install poppler-utils)", file=sys.stderr)
            return 2
    try:
        settings = OcrSettings(max_pages=max(args.scan_pages, OcrSettings().max_pages), dpi=args.ocr_dpi,
                               page_segmentation=args.psm)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("# PDF and HTML extraction on twin corpora (HTML needles)")
    summaries = [compare_twin(twin, package_root(args.cache, twin.package), settings)
                 for twin in TWINS if twin.name in args.twins]
    scanned = None
    if args.scan_pages:
        twin = TWINS[0]
        scanned = compare_scanned(twin, package_root(args.cache, twin.package), args.scan_first,
                                  args.scan_pages, args.scan_dpi, settings)
    print("\n## Summary\n")
    print(summary_table(summaries))
    if scanned:
        print(f"\nScanned twin ({TWINS[0].name}, {args.scan_pages} pages, OCR'd at {settings.dpi} dpi)\n")
        print(markdown_table(
            ["scanned at", "needles quoted whole, of the text PDF's", "mean OCR confidence",
             "s a page a core", "load average (start, end)"],
            [[f"{row.dpi} dpi", f"{row.ratio:.3f}", _confidence(row.confidence),
              f"{row.page_core_seconds:.2f}", f"{row.load[0]:.1f}, {row.load[1]:.1f}"] for row in scanned]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
