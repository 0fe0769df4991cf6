"""Reads a corpus folder into canonical document texts, one record per file.

Every chunk offset in the project indexes a document's ``canonical_text``. Markdown and plain
text are read as they are (Markdown front matter stripped); HTML and PDF go through
BeautifulSoup and pypdf. A file that cannot be read becomes a ``failed`` record carrying its
reason, never an exception that stops the run.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from rag_pipeline.core.markdown import first_title
from rag_pipeline.core.versions import PIPELINE_VERSION


class DocumentFormat(StrEnum):
    MARKDOWN = "markdown"
    TEXT = "text"
    HTML = "html"
    PDF = "pdf"


class DocumentStatus(StrEnum):
    OK = "ok"
    FAILED = "failed"


SUFFIX_FORMATS: Mapping[str, DocumentFormat] = {
    ".md": DocumentFormat.MARKDOWN,
    ".markdown": DocumentFormat.MARKDOWN,
    ".txt": DocumentFormat.TEXT,
    ".text": DocumentFormat.TEXT,
    ".html": DocumentFormat.HTML,
    ".htm": DocumentFormat.HTML,
    ".pdf": DocumentFormat.PDF,
}


class ExtractionError(Exception):
    """A document could not be turned into text; the message is the reason shown to users."""


@dataclass(frozen=True)
class Extractor:
    name: str
    version: str


def _library_version(module_name: str) -> str:
    from importlib.metadata import version

    return version(module_name)


def extractor_for(fmt: DocumentFormat) -> Extractor:
    """The extractor (name and version) used for a format; its version stamps each document."""
    if fmt is DocumentFormat.MARKDOWN:
        return Extractor("markdown-frontmatter", "1")
    if fmt is DocumentFormat.TEXT:
        return Extractor("plain-text", "1")
    if fmt is DocumentFormat.HTML:
        return Extractor("html-beautifulsoup", f"1+bs4-{_library_version('beautifulsoup4')}")
    return Extractor("pdf-pypdf", f"1+pypdf-{_library_version('pypdf')}")


@dataclass(frozen=True)
class Extracted:
    title: str
    canonical_text: str
    page_starts: tuple[int, ...] = ()


@dataclass(frozen=True)
class DocumentRecord:
    """One row of the ``documents`` table."""

    document_id: str
    path: str
    title: str
    canonical_text: str
    content_sha256: str
    format: str
    extractor: str
    extractor_version: str
    status: str
    error: str | None
    page_starts: tuple[int, ...] = field(default_factory=tuple)
    pipeline_version: str = PIPELINE_VERSION

    @property
    def ok(self) -> bool:
        return self.status == DocumentStatus.OK.value


_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*\n", re.DOTALL)


def _decode_utf8(data: bytes) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ExtractionError(f"not valid UTF-8 at byte {exc.start}: {exc.reason}") from exc
    return text.replace("\r\n", "\n").replace("\r", "\n")


def extract_markdown(data: bytes, stem: str) -> Extracted:
    """Markdown as it is, minus YAML front matter; title from the first ``# `` heading."""
    text = _decode_utf8(data)
    front_title = None
    match = _FRONT_MATTER.match(text)
    if match:
        for line in match.group(1).splitlines():
            key, _, value = line.partition(":")
            if key.strip().lower() == "title" and value.strip():
                front_title = value.strip().strip("'\"")
        text = text[match.end() :]
    title = first_title(text) or front_title or stem
    return Extracted(title=title, canonical_text=text)


def extract_text(data: bytes, stem: str) -> Extracted:
    """Plain text as it is; the title is the file name's stem."""
    return Extracted(title=stem, canonical_text=_decode_utf8(data))


_HTML_BLOCKS = ("h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "pre", "blockquote", "dt", "dd",
                "td", "th", "figcaption")


def extract_html(data: bytes, stem: str) -> Extracted:
    """HTML blocks (and ``<div>`` elements holding no block) as paragraphs; ``<h1>`` becomes
    ``# ``, deeper headings ``## `` sections."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(data, "lxml")
    for tag in soup(["script", "style", "noscript", "template", "nav"]):
        tag.decompose()
    blocks: list[str] = []
    for element in soup.find_all((*_HTML_BLOCKS, "div")):
        if element.find_parent(_HTML_BLOCKS):
            continue
        if element.name == "div" and element.find((*_HTML_BLOCKS, "div")) is not None:
            continue
        if element.name == "pre":
            text = element.get_text().strip("\n")
        else:
            text = " ".join(element.get_text(" ").split())
        if not text.strip():
            continue
        if element.name == "h1":
            text = "# " + text
        elif element.name in ("h2", "h3", "h4", "h5", "h6"):
            text = "## " + text
        blocks.append(text)
    canonical = "\n\n".join(blocks) + ("\n" if blocks else "")
    title_tag = soup.find("title")
    if title_tag and title_tag.get_text().strip():
        title = " ".join(title_tag.get_text().split())
    else:
        title = first_title(canonical) or stem
    return Extracted(title=title, canonical_text=canonical)


def extract_pdf(data: bytes, stem: str) -> Extracted:
    """Text layer page by page; ``page_starts[i]`` is where page ``i + 1`` starts."""
    import io

    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ExtractionError("encrypted PDF: no password is configured")
        pages = [(page.extract_text() or "").replace("\r\n", "\n") for page in reader.pages]
        meta_title = reader.metadata.title if reader.metadata else None
    except ExtractionError:
        raise
    except Exception as exc:  # pypdf raises many types for damaged files; each is a reason
        raise ExtractionError(f"unreadable PDF: {type(exc).__name__}: {exc}") from exc
    if not any(page.strip() for page in pages):
        raise ExtractionError(f"no text layer in {len(pages)} page(s) (scanned PDF?)")
    starts, parts, offset = [], [], 0
    for page in pages:
        starts.append(offset)
        parts.append(page.strip("\n"))
        offset += len(parts[-1]) + 2
    canonical = "\n\n".join(parts) + "\n"
    first_line = next((line.strip() for line in canonical.splitlines() if line.strip()), stem)
    return Extracted(title=(meta_title or first_line or stem).strip(), canonical_text=canonical,
                     page_starts=tuple(starts))


_EXTRACTORS = {
    DocumentFormat.MARKDOWN: extract_markdown,
    DocumentFormat.TEXT: extract_text,
    DocumentFormat.HTML: extract_html,
    DocumentFormat.PDF: extract_pdf,
}


def discover(corpus_root: Path) -> list[Path]:
    """Files under the root with a supported suffix, hidden ones skipped, sorted by path."""
    found = []
    for path in sorted(corpus_root.rglob("*")):
        rel = path.relative_to(corpus_root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if path.suffix.lower() in SUFFIX_FORMATS and (path.is_file() or path.is_symlink()):
            found.append(path)
    return found


def document_id_for(path: Path, corpus_root: Path) -> str:
    """A stable id: the path relative to the corpus root, with forward slashes."""
    return path.relative_to(corpus_root).as_posix()


def extract_document(path: Path, corpus_root: Path) -> DocumentRecord:
    """Reads one file; any failure is returned as a ``failed`` record with its reason."""
    fmt = SUFFIX_FORMATS[path.suffix.lower()]
    extractor = extractor_for(fmt)
    document_id = document_id_for(path, corpus_root)

    def failed(reason: str, digest: str = "") -> DocumentRecord:
        return DocumentRecord(document_id, str(path), path.stem, "", digest, fmt.value,
                              extractor.name, extractor.version, DocumentStatus.FAILED.value,
                              reason)

    resolved = path.resolve()
    if not resolved.is_relative_to(corpus_root.resolve()):
        return failed(f"outside the corpus root: resolves to {resolved}")
    try:
        data = resolved.read_bytes()
    except OSError as exc:
        return failed(f"unreadable: {exc.strerror or exc}")
    digest = hashlib.sha256(data).hexdigest()
    try:
        extracted = _EXTRACTORS[fmt](data, path.stem)
    except ExtractionError as exc:
        return failed(str(exc), digest)
    if not extracted.canonical_text.strip():
        return failed("no text: the file is empty after extraction", digest)
    return DocumentRecord(document_id, str(path), extracted.title, extracted.canonical_text,
                          digest, fmt.value, extractor.name, extractor.version,
                          DocumentStatus.OK.value, None, extracted.page_starts)


@dataclass(frozen=True)
class ExtractionResult:
    records: list[DocumentRecord]
    extracted: int
    reused: int

    @property
    def failed(self) -> list[DocumentRecord]:
        return [r for r in self.records if not r.ok]


def extract_corpus(corpus_root: Path,
                   previous: Iterable[DocumentRecord] = ()) -> ExtractionResult:
    """Extracts every document, reusing a previous ``ok`` record whose bytes and stamps match.

    Failed documents are always tried again, so fixing a file (or a bug) needs no manual reset.
    """
    if not corpus_root.is_dir():
        raise FileNotFoundError(f"corpus folder not found: {corpus_root}")
    reusable = {r.document_id: r for r in previous if r.ok}
    records, extracted, reused = [], 0, 0
    for path in discover(corpus_root):
        document_id = document_id_for(path, corpus_root)
        old = reusable.get(document_id)
        if old is not None and path.resolve().is_relative_to(corpus_root.resolve()):
            try:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                digest = ""
            fmt = SUFFIX_FORMATS[path.suffix.lower()]
            if (digest == old.content_sha256
                    and old.extractor_version == extractor_for(fmt).version
                    and old.pipeline_version == PIPELINE_VERSION):
                records.append(old)
                reused += 1
                continue
        records.append(extract_document(path, corpus_root))
        extracted += 1
    return ExtractionResult(records, extracted, reused)
