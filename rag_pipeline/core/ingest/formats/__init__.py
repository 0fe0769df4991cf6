"""The registry of document formats: one module per format, one instance each in ``REGISTRY``.

A new format is one module here (a :class:`DocumentFormat` subclass), its entry below and its
tests in ``rag_pipeline_tests/core/ingest/formats/test_<name>.py`` (what else names the formats:
``docs/design/code-map.md``, "A newcomer's checklist").
"""

from __future__ import annotations

from pathlib import Path

from rag_pipeline.core.ingest.formats.asciidoc import AsciiDocFormat
from rag_pipeline.core.ingest.formats.base import ContainerFormat, DocumentFormat
from rag_pipeline.core.ingest.formats.csv import CsvFormat
from rag_pipeline.core.ingest.formats.docx import DocxFormat
from rag_pipeline.core.ingest.formats.epub import EpubFormat
from rag_pipeline.core.ingest.formats.html import HtmlFormat
from rag_pipeline.core.ingest.formats.image import ImageFormat
from rag_pipeline.core.ingest.formats.info import InfoFormat
from rag_pipeline.core.ingest.formats.ipynb import IpynbFormat
from rag_pipeline.core.ingest.formats.mail import EmlFormat, MboxFormat
from rag_pipeline.core.ingest.formats.man import ManFormat
from rag_pipeline.core.ingest.formats.markdown import MarkdownFormat
from rag_pipeline.core.ingest.formats.odf import OdpFormat, OdsFormat, OdtFormat
from rag_pipeline.core.ingest.formats.pdf import PdfFormat
from rag_pipeline.core.ingest.formats.pptx import PptxFormat
from rag_pipeline.core.ingest.formats.rst import RstFormat
from rag_pipeline.core.ingest.formats.srt import SrtFormat
from rag_pipeline.core.ingest.formats.tar import TarFormat
from rag_pipeline.core.ingest.formats.text import TextFormat
from rag_pipeline.core.ingest.formats.webvtt import WebVttFormat
from rag_pipeline.core.ingest.formats.xlsx import XlsxFormat
from rag_pipeline.core.ingest.formats.zip import ZipFormat
from rag_pipeline.core.ingest.pdf_ocr import OcrBudget, OcrSettings

_OCR = OcrSettings()
_OCR_BUDGET = OcrBudget(_OCR.run_timeout_s)
"""One run's OCR seconds, shared by the formats that OCR (scanned PDF pages and images)."""

REGISTRY: tuple[DocumentFormat, ...] = (
    MarkdownFormat(),
    TextFormat(),
    HtmlFormat(),
    PdfFormat(_OCR, _OCR_BUDGET),
    DocxFormat(),
    CsvFormat(),
    XlsxFormat(),
    WebVttFormat(),
    SrtFormat(),
    PptxFormat(),
    IpynbFormat(),
    ImageFormat(_OCR, _OCR_BUDGET),
    RstFormat(),
    AsciiDocFormat(),
    InfoFormat(),
    ManFormat(),
    EpubFormat(),
    OdtFormat(),
    OdpFormat(),
    OdsFormat(),
    EmlFormat(),
    MboxFormat(),
    ZipFormat(),
    TarFormat(),
)

_BY_SUFFIX = {suffix: fmt for fmt in REGISTRY for suffix in fmt.suffixes}
_BY_FILE_NAME = {file_name.upper(): fmt for fmt in REGISTRY for file_name in fmt.file_names}
_BY_NAME = {fmt.name: fmt for fmt in REGISTRY}


def format_for(path: Path) -> DocumentFormat | None:
    """The format that reads ``path``: by its last two suffixes (``.tar.gz``), else its last
    one, or for a suffix-less file by its name, all regardless of case; ``None`` when no format
    reads it."""
    if path.suffix:
        double = "".join(path.suffixes[-2:]).lower()
        return _BY_SUFFIX.get(double) or _BY_SUFFIX.get(path.suffix.lower())
    return _BY_FILE_NAME.get(path.name.upper())


def format_named(name: str) -> DocumentFormat:
    """The format whose documents carry ``format == name``.

    Raises:
        KeyError: No format has that name.
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no document format named {name!r}; known: "
                       f"{', '.join(sorted(_BY_NAME))}") from None


def chunked_format(name: str) -> bool:
    """Whether documents of the format named ``name`` are chunked, so searched and citable
    (:attr:`DocumentFormat.chunked`: not an archive's member list); a name no format has any
    more counts as chunked."""
    fmt = _BY_NAME.get(name)
    return fmt is None or fmt.chunked


__all__ = ["REGISTRY", "ContainerFormat", "DocumentFormat", "chunked_format", "format_for",
           "format_named"]
