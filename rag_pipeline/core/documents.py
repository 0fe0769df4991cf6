"""Reads a corpus folder into canonical document texts, one record per file.

Every chunk offset in the project indexes a document's ``canonical_text``. Markdown and plain
text are read as they are (Markdown front matter stripped); HTML and PDF go through
BeautifulSoup and pypdf. A file that cannot be read becomes a ``failed`` record carrying its
reason, never an exception that stops the run.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from rag_pipeline.core.markdown import first_title
from rag_pipeline.core.versions import PIPELINE_VERSION

if TYPE_CHECKING:
    from bs4 import BeautifulSoup, Tag


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
        return Extractor("html-beautifulsoup", f"2+bs4-{_library_version('beautifulsoup4')}")
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


def _outer_blocks(soup: BeautifulSoup) -> list[Tag]:
    """In document order: the block elements inside no other block, and the ``<div>`` elements
    inside no block that hold no block or ``<div>`` themselves.

    One pass over the tree, so the time is linear in the document however deep it nests: a
    block's "inside a block" flag comes from its parent, and each element is marked as holding
    a block at most once (the walk up from a block stops at the first ancestor already marked,
    whose own ancestors are all marked).
    """
    from bs4 import Tag as BsTag

    inside_block: dict[int, bool] = {id(soup): False}
    holds_block: set[int] = set()
    candidates: list[Tag] = []
    for element in soup.descendants:
        if not isinstance(element, BsTag):
            continue
        parent = element.parent
        inside_block[id(element)] = inside_block[id(parent)] or parent.name in _HTML_BLOCKS
        if element.name not in _HTML_BLOCKS and element.name != "div":
            continue
        candidates.append(element)
        ancestor = parent
        while ancestor is not None and id(ancestor) not in holds_block:
            holds_block.add(id(ancestor))
            ancestor = ancestor.parent
    return [element for element in candidates
            if not inside_block[id(element)]
            and not (element.name == "div" and id(element) in holds_block)]


def _reading_order(soup: BeautifulSoup, blocks: list[Tag]) -> list[Tag | str]:
    """``blocks`` in document order, with the loose text between them (text in no block, such
    as ``<body>Text</body>`` or ``<div>Intro <p>Para</p></div>``; ``<head>`` excluded) as runs
    of white-space-collapsed strings. One pass, like :func:`_outer_blocks`."""
    from bs4 import NavigableString
    from bs4 import Tag as BsTag

    block_ids = {id(block) for block in blocks}
    covered: dict[int, bool] = {id(soup): False}
    out: list[Tag | str] = []
    loose: list[str] = []

    def flush() -> None:
        text = " ".join(" ".join(loose).split())
        if text:
            out.append(text)
        loose.clear()

    for node in soup.descendants:
        parent = node.parent
        inside = covered[id(parent)] or id(parent) in block_ids
        if isinstance(node, BsTag):
            covered[id(node)] = inside or node.name == "head"
            if id(node) in block_ids and not inside:
                flush()
                out.append(node)
        elif type(node) is NavigableString and not inside:
            loose.append(str(node))
    flush()
    return out


def html_block_text(element: Tag) -> str:
    """A chosen HTML block as its paragraph: ``<pre>`` keeps its lines, anything else has its
    white space collapsed; ``<h1>`` gets ``# ``, deeper headings ``## ``; "" when it holds no
    text."""
    if element.name == "pre":
        text = element.get_text().strip("\n")
    else:
        text = " ".join(element.get_text(" ").split())
    if not text.strip():
        return ""
    if element.name == "h1":
        return "# " + text
    if element.name in ("h2", "h3", "h4", "h5", "h6"):
        return "## " + text
    return text


def extract_html(data: bytes, stem: str) -> Extracted:
    """HTML blocks (and ``<div>`` elements holding no block) as paragraphs, and the loose text
    between them as paragraphs of its own; ``<h1>`` becomes ``# ``, deeper headings ``## ``
    sections."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(data, "lxml")
    for tag in soup(["script", "style", "noscript", "template", "nav"]):
        tag.decompose()
    blocks: list[str] = []
    for element in _reading_order(soup, _outer_blocks(soup)):
        text = element if isinstance(element, str) else html_block_text(element)
        if text:
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


DEFAULT_MAX_DOCUMENT_BYTES = 20 * 1024 * 1024
"""20 MiB: about four hours of embedding on two CPU cores; a larger file is most likely a dump."""


@dataclass(frozen=True)
class ExtractionSettings:
    """Limits that apply to every document.

    Attributes:
        max_document_bytes: A file larger than this fails with its size as the reason, unread.

    Raises:
        ValueError: If ``max_document_bytes`` is not positive.
    """

    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES

    def __post_init__(self) -> None:
        if self.max_document_bytes < 1:
            raise ValueError(f"max_document_bytes must be positive, got {self.max_document_bytes}")


def discover(corpus_root: Path) -> list[Path]:
    """Entries under the root with a supported suffix, hidden ones skipped, sorted by path.

    Everything but a real directory is listed, symlinks and special files included, so that
    each one is answered (``failed`` with its reason) rather than silently left out. Symlinked
    directories are not walked into.
    """
    found = []
    for path in sorted(corpus_root.rglob("*")):
        rel = path.relative_to(corpus_root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if path.suffix.lower() in SUFFIX_FORMATS and (path.is_symlink() or not path.is_dir()):
            found.append(path)
    return found


def document_id_for(path: Path, corpus_root: Path) -> str:
    """A stable id: the path relative to the corpus root, with forward slashes."""
    return path.relative_to(corpus_root).as_posix()


_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind_of(mode: int) -> str:
    return next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")


def read_document_bytes(path: Path, corpus_root: Path, max_bytes: int) -> bytes:
    """The bytes of a regular file inside the root, checked before anything is opened.

    The checks run on the file's metadata (``stat``), in this order: a symlink loop, a target
    outside the root, a missing target, a special file (directory, named pipe, device, socket),
    and the size. Only a regular file is opened, non-blocking and without following a link
    swapped in after the checks, and it must still be the file that was checked.

    Raises:
        ExtractionError: With the reason the file cannot be a document.
    """
    info: os.stat_result | None = None
    missing: OSError | None = None
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ExtractionError("symlink loop: following the link never reaches a file") from exc
        missing = exc
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError) as exc:  # Python 3.11 raises RuntimeError on a loop
        raise ExtractionError("symlink loop: following the link never reaches a file") from exc
    if not resolved.is_relative_to(corpus_root.resolve()):
        raise ExtractionError(f"outside the corpus root: resolves to {resolved}")
    if missing is not None or info is None:
        if path.is_symlink():
            raise ExtractionError(f"broken symlink: {resolved} does not exist") from missing
        raise ExtractionError(f"unreadable: {missing.strerror or missing}") from missing
    if not stat.S_ISREG(info.st_mode):
        raise ExtractionError(f"not a regular file: {_kind_of(info.st_mode)}, never opened")
    if info.st_size > max_bytes:
        raise ExtractionError(f"too large: {info.st_size} bytes, over the limit of {max_bytes} "
                              "bytes per document (max_document_bytes)")
    flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(resolved, flags)
    except OSError as exc:
        raise ExtractionError(f"unreadable: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(handle.fileno())
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise ExtractionError("changed while being read: the file was replaced after its "
                                  "checks")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ExtractionError(f"too large: over the limit of {max_bytes} bytes per document "
                              "(max_document_bytes); the file grew while being read")
    return data


def extract_document(path: Path, corpus_root: Path,
                     settings: ExtractionSettings | None = None) -> DocumentRecord:
    """Reads one file; any failure is returned as a ``failed`` record with its reason."""
    settings = settings or ExtractionSettings()
    fmt = SUFFIX_FORMATS[path.suffix.lower()]
    extractor = extractor_for(fmt)
    document_id = document_id_for(path, corpus_root)

    def failed(reason: str, digest: str = "") -> DocumentRecord:
        return DocumentRecord(document_id, str(path), path.stem, "", digest, fmt.value,
                              extractor.name, extractor.version, DocumentStatus.FAILED.value,
                              reason)

    try:
        data = read_document_bytes(path, corpus_root, settings.max_document_bytes)
    except ExtractionError as exc:
        return failed(str(exc))
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


def extract_corpus(corpus_root: Path, previous: Iterable[DocumentRecord] = (),
                   settings: ExtractionSettings | None = None) -> ExtractionResult:
    """Extracts every document, reusing a previous ``ok`` record whose bytes and stamps match.

    Failed documents are always tried again, so fixing a file (or a bug) needs no manual reset.
    """
    settings = settings or ExtractionSettings()
    if not corpus_root.is_dir():
        raise FileNotFoundError(f"corpus folder not found: {corpus_root}")
    reusable = {r.document_id: r for r in previous if r.ok}
    records, extracted, reused = [], 0, 0
    for path in discover(corpus_root):
        document_id = document_id_for(path, corpus_root)
        old = reusable.get(document_id)
        if old is not None:
            try:
                digest = hashlib.sha256(read_document_bytes(
                    path, corpus_root, settings.max_document_bytes)).hexdigest()
            except ExtractionError:
                digest = ""  # not reusable: extract_document below records the same reason
            fmt = SUFFIX_FORMATS[path.suffix.lower()]
            if (digest == old.content_sha256
                    and old.extractor_version == extractor_for(fmt).version
                    and old.pipeline_version == PIPELINE_VERSION):
                records.append(old)
                reused += 1
                continue
        records.append(extract_document(path, corpus_root, settings))
        extracted += 1
    return ExtractionResult(records, extracted, reused)
