"""Reads a corpus folder into document records, one per file, reusing unchanged ones.

A file that cannot be read becomes a ``failed`` record carrying its reason, never an exception
that stops the run; a file no format reads becomes a ``skipped`` record saying so. Hidden
files and everything under a hidden folder (a name starting with ``.``: ``.git``, ``.cache``,
editor swap files) are not part of the corpus and get no record.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rag_pipeline.core.ingest.extracted import ExtractionError
from rag_pipeline.core.ingest.formats import format_for
from rag_pipeline.core.ingest.reading import ExtractionSettings, read_document_bytes
from rag_pipeline.core.ingest.records import DocumentRecord, DocumentStatus
from rag_pipeline.core.storage.versions import PIPELINE_VERSION


def discover(corpus_root: Path) -> list[Path]:
    """Every entry under the root but hidden ones and real directories, sorted by path.

    Files no format reads are listed too, and so are symlinks and special files, so that each
    one is answered (``skipped`` or ``failed`` with its reason) rather than silently left out.
    Symlinked directories are not walked into.
    """
    found = []
    for path in sorted(corpus_root.rglob("*")):
        rel = path.relative_to(corpus_root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if path.is_symlink() or not path.is_dir():
            found.append(path)
    return found


def skip_reason(path: Path) -> str:
    """Why no format reads ``path``: ``no reader for .xyz files`` (or ``files named X``; a
    symlinked directory says it is one)."""
    if path.is_symlink() and path.is_dir():
        return "a symlink to a directory: not walked into"
    if path.suffix:
        return f"no reader for {path.suffix.lower()} files"
    return f"no reader for files named {path.name} (without a suffix)"


def document_id_for(path: Path, corpus_root: Path) -> str:
    """A stable id: the path relative to the corpus root, with forward slashes."""
    return path.relative_to(corpus_root).as_posix()


def shown_file_name(name: str) -> str:
    """``name`` as text every encoder accepts: Python decodes file-name bytes that are not
    UTF-8 to lone surrogates (``os.fsdecode``), which no table, JSON or terminal can hold; they
    are shown as ``\\xNN``. A valid name is returned unchanged."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name


def extract_document(path: Path, corpus_root: Path,
                     settings: ExtractionSettings | None = None) -> DocumentRecord:
    """Reads one file; any failure is returned as a ``failed`` record with its reason, a file
    no format reads as a ``skipped`` record (never opened)."""
    settings = settings or ExtractionSettings()
    document_id = document_id_for(path, corpus_root)
    fmt = format_for(path)
    shown = shown_file_name(document_id)
    if shown != document_id:  # bytes that are not UTF-8 in its name: one failed record
        return DocumentRecord(shown, shown_file_name(str(path)), shown_file_name(path.stem), "",
                              "", fmt.name if fmt else "", "", "", DocumentStatus.FAILED.value,
                              f"the file name is not valid UTF-8 ({shown}): rename the file")
    if fmt is None:
        return DocumentRecord(document_id, str(path), path.stem, "", "", "", "", "",
                              DocumentStatus.SKIPPED.value, skip_reason(path))
    extractor = fmt.extractor()

    def failed(reason: str, digest: str = "") -> DocumentRecord:
        return DocumentRecord(document_id, str(path), path.stem, "", digest, fmt.name,
                              extractor.name, extractor.version, DocumentStatus.FAILED.value,
                              reason)

    try:
        data = read_document_bytes(path, corpus_root, settings.max_document_bytes)
    except ExtractionError as exc:
        return failed(str(exc))
    digest = hashlib.sha256(data).hexdigest()
    try:
        extracted = fmt.extract(data, path.stem)
    except ExtractionError as exc:
        return failed(str(exc), digest)
    if not extracted.canonical_text.strip():
        return failed("no text: the file is empty after extraction", digest)
    return DocumentRecord(document_id, str(path), extracted.title, extracted.canonical_text,
                          digest, fmt.name, extractor.name, extractor.version,
                          DocumentStatus.OK.value, None, extracted.sections, extracted.anchors,
                          extracted.notes, pages=extracted.pages)


@dataclass(frozen=True)
class ExtractionResult:
    """The corpus's records, in path order.

    Attributes:
        records: One per discovered file.
        extracted: Files read this time (``ok`` or ``failed``).
        reused: Previous ``ok`` records kept because the file's bytes and stamps match.
        moved: Of the reused records, those whose file now lives at another path (the corpus
            folder moved): their ``path`` is updated, nothing is re-extracted.
    """

    records: list[DocumentRecord]
    extracted: int
    reused: int
    moved: int = 0

    @property
    def failed(self) -> list[DocumentRecord]:
        return [r for r in self.records if r.failed]

    @property
    def skipped(self) -> list[DocumentRecord]:
        return [r for r in self.records if r.skipped]


def extract_corpus(corpus_root: Path, previous: Iterable[DocumentRecord] = (),
                   settings: ExtractionSettings | None = None) -> ExtractionResult:
    """Extracts every document, reusing a previous ``ok`` record whose bytes and stamps match.

    Failed documents are always tried again, so fixing a file (or a bug) needs no manual reset.
    A record is matched by its document id (the path relative to the root), so a corpus whose
    folder moved reuses every unchanged record, with its ``path`` set to where the file is now
    (citation URLs follow). Skipped files are counted in neither ``extracted`` nor ``reused``.
    """
    settings = settings or ExtractionSettings()
    if not corpus_root.is_dir():
        raise FileNotFoundError(f"corpus folder not found: {corpus_root}")
    reusable = {r.document_id: r for r in previous if r.ok}
    records, extracted, reused, moved = [], 0, 0, 0
    for path in discover(corpus_root):
        document_id = document_id_for(path, corpus_root)
        fmt = format_for(path)
        if fmt is None:
            records.append(extract_document(path, corpus_root, settings))
            continue
        old = reusable.get(document_id)
        if old is not None and old.format == fmt.name:
            try:
                digest = hashlib.sha256(read_document_bytes(
                    path, corpus_root, settings.max_document_bytes)).hexdigest()
            except ExtractionError:
                digest = ""  # not reusable: extract_document below records the same reason
            if (digest == old.content_sha256
                    and old.extractor_version == fmt.extractor().version
                    and old.pipeline_version == PIPELINE_VERSION):
                if old.path != str(path):
                    old = dataclasses.replace(old, path=str(path))
                    moved += 1
                records.append(old)
                reused += 1
                continue
        records.append(extract_document(path, corpus_root, settings))
        extracted += 1
    return ExtractionResult(records, extracted, reused, moved)
