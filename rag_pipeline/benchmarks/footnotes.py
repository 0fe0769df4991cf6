"""Footnotes and page furniture on R's manuals: what the PDF layout leaves in the text.

Run: ``nice -n 10 .venv/bin/python -m rag_pipeline.benchmarks.footnotes [--cache DIR]``.

Debian's ``r-doc-pdf`` (R's seven manuals, typeset by TeX from Texinfo, footnotes on most
pages) is fetched with ``apt-get download`` and unpacked with ``dpkg -x`` into ``--cache``
(default ``/tmp/rag_pipeline_twins``, as the extraction benchmark's twins) when it is not
there. Each manual is read by the pipeline (:func:`~rag_pipeline.core.ingest.pdf_extract.read_pdf`)
and cut by the ``header`` chunker (512 characters); printed per manual:

- **footnotes**: footnote blocks moved out of the running text, each a section titled
  ``<section> (footnote)``;
- **bare-mark paragraphs**: paragraphs that are only a footnote mark (``1``, ``*``): a mark
  split from the sentence or the footnote it belongs to;
- **chunks with a running head**: chunks holding a running head or foot as ``pdftotext``
  prints it (:func:`rag_pipeline.benchmarks.extraction.running_heads`).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rag_pipeline.benchmarks.extraction import (
    DEFAULT_CACHE,
    collapse,
    package_root,
    pdftotext_pages,
    pipeline,
    running_heads,
    share,
)
from rag_pipeline.core.ingest.pdf_extract import read_pdf

PACKAGE = "r-doc-pdf"
MANUALS = ("R-FAQ", "R-admin", "R-data", "R-exts", "R-intro", "R-ints", "R-lang")
MANUAL_DIR = "usr/share/R/doc/manual"
_BARE_MARK = re.compile(r"(?:\d{1,3}|[*†‡§¶]{1,3})")


@dataclass(frozen=True)
class Furniture:
    manual: str
    pages: int
    seconds: float
    chunks: int
    footnotes: int
    bare_marks: int
    with_heads: int


def bare_marks(text: str) -> int:
    """Paragraphs of ``text`` that are only a footnote mark."""
    return sum(1 for paragraph in text.split("\n\n") if _BARE_MARK.fullmatch(paragraph.strip()))


def measure(pdf: Path) -> Furniture:
    started = time.perf_counter()
    reading = read_pdf(pdf.read_bytes(), pdf.stem)
    seconds = time.perf_counter() - started
    chunked = pipeline(reading)
    pages = pdftotext_pages(pdf)
    heads = running_heads(pages)
    contents = [collapse(content) for _, content in chunked.chunks]
    return Furniture(pdf.stem, len(pages), seconds, len(contents), reading.layout.footnotes,
                     bare_marks(reading.layout.canonical_text),
                     sum(1 for content in contents if any(head in content for head in heads)))


def furniture_table(rows: Sequence[Furniture]) -> str:
    lines = ["| manual | pages | read in | chunks | footnotes | bare-mark paragraphs | "
             "chunks with a running head |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r.manual} | {r.pages} | {r.seconds:.1f} s | {r.chunks} | {r.footnotes} | "
              f"{r.bare_marks} | {share(r.with_heads, r.chunks)} |" for r in rows]
    total = Furniture("all", sum(r.pages for r in rows), sum(r.seconds for r in rows),
                      sum(r.chunks for r in rows), sum(r.footnotes for r in rows),
                      sum(r.bare_marks for r in rows), sum(r.with_heads for r in rows))
    lines.append(f"| **{total.manual}** | {total.pages} | {total.seconds:.1f} s | {total.chunks} | "
                 f"{total.footnotes} | {total.bare_marks} | {share(total.with_heads, total.chunks)} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_pipeline.benchmarks.footnotes",
                                     description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help=f"where the Debian package is unpacked (default {DEFAULT_CACHE})")
    args = parser.parse_args(argv)
    if shutil.which("pdftotext") is None:
        print("error: pdftotext is not installed (apt-get install poppler-utils)", file=sys.stderr)
        return 2
    root = package_root(args.cache, PACKAGE) / MANUAL_DIR
    print(f"## R's manuals ({PACKAGE}): footnotes and what is left of the page furniture\n")
    print(furniture_table([measure(root / f"{manual}.pdf") for manual in MANUALS]))
    return 0


__all__ = ["Furniture", "bare_marks", "furniture_table", "measure"]


if __name__ == "__main__":
    sys.exit(main())
