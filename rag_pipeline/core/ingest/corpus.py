"""Reads a corpus source into document records, one per entry, reusing unchanged ones.

A source (:mod:`rag_pipeline.core.ingest.sources`: a folder, an S3 prefix, a git commit) lists
its entries with fingerprints; an entry whose fingerprint and stamps match its previous record
is not opened at all. An entry that cannot be read becomes a ``failed`` record carrying its
reason, never an exception that stops the run, and is not tried again until its fingerprint
changes (or ``retry_failed`` asks); an entry no format reads becomes a ``skipped`` record
saying so. Hidden names (a segment starting with ``.``) are not part of the corpus. The run's
reconciliation report (:mod:`rag_pipeline.core.ingest.reconcile`) comes with the records.

One entry's bytes become its records in :func:`records_from_bytes`: the single place where a
file's bytes and name turn into documents.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from rag_pipeline.core.ingest.containers import PreviousRecords, expands_name, extract_expanding_entry
from rag_pipeline.core.ingest.extracted import ExtractionError, FileVanishedError, no_text_reason
from rag_pipeline.core.ingest.formats import REGISTRY, DocumentFormat, format_for
from rag_pipeline.core.ingest.reading import EMPTY_FILE, ExtractionSettings, kept_failed
from rag_pipeline.core.ingest.reading_limits import document_reading_limits
from rag_pipeline.core.ingest.reconcile import (
    HIDDEN_DETAIL,
    LEFT_THE_INDEX,
    Change,
    Reconciled,
    Reconciliation,
    deleted_rows,
)
from rag_pipeline.core.ingest.records import DocumentRecord, DocumentStatus
from rag_pipeline.core.ingest.sources import Entry, LocalSource, Source, SourceError, discover
from rag_pipeline.core.ingest.sources.base import enclosing_ids, shown_file_name
from rag_pipeline.core.ingest.sources.local import local_entry
from rag_pipeline.core.storage.versions import PIPELINE_VERSION

__all__ = ["ExtractionResult", "discover", "document_id_for", "extract_corpus", "extract_document",
           "extract_entry", "records_from_bytes", "skip_reason"]


def skip_reason(name: str | Path) -> str:
    """Why no format reads the file ``name``: ``no reader for .xyz files`` (or ``files named
    X``)."""
    path = PurePosixPath(str(name))
    if path.suffix:
        return f"no reader for {path.suffix.lower()} files"
    return f"no reader for files named {path.name} (without a suffix)"


def document_id_for(path: Path, corpus_root: Path) -> str:
    """A stable id: the path relative to the corpus root, with forward slashes."""
    return path.relative_to(corpus_root).as_posix()


def _same_reading(was: DocumentRecord, record: DocumentRecord) -> bool:
    """Whether ``record`` is what ``was`` read: the same bytes by the same extractor and
    pipeline, with the same outcome (a member of an archive read again because another member
    changed is unchanged)."""
    return bool(record.content_sha256) and all(getattr(was, name) == getattr(record, name) for name in (
        "content_sha256", "status", "error", "extractor", "extractor_version", "pipeline_version"))


def _format_of(document_id: str) -> DocumentFormat | None:
    return format_for(PurePosixPath(document_id))  # type: ignore[arg-type]


def records_from_bytes(document_id: str, location: str, data: bytes, fmt: DocumentFormat,
                       fingerprint: str = "",
                       max_seconds: float | None = None) -> list[DocumentRecord]:
    """The documents one entry's bytes hold (one today; a container would add its members as
    ``<id>/<member path>``): ``ok`` with the canonical text, or ``failed`` with the reason, the
    reading stopped after ``max_seconds`` (None: never)."""
    extractor = fmt.extractor()
    digest = hashlib.sha256(data).hexdigest()
    stem = PurePosixPath(document_id).stem

    def failed(reason: str) -> list[DocumentRecord]:
        return [DocumentRecord(document_id, location, stem, "", digest, fmt.name, extractor.name,
                               extractor.version, DocumentStatus.FAILED.value, reason,
                               source_fingerprint=fingerprint)]

    if not data:
        return failed(EMPTY_FILE)
    try:
        with document_reading_limits(max_seconds):
            extracted = fmt.read(data, stem)
    except ExtractionError as exc:
        return failed(str(exc))
    if not extracted.canonical_text.strip():
        return failed(no_text_reason(extracted))
    return [DocumentRecord(document_id, location, extracted.title, extracted.canonical_text,
                           digest, fmt.name, extractor.name, extractor.version,
                           DocumentStatus.OK.value, None, extracted.sections, extracted.anchors,
                           extracted.notes, tables=extracted.tables,
                           pages=extracted.pages, source_fingerprint=fingerprint)]


def _refused(source: Source, entry: Entry) -> DocumentRecord | None:
    """The record of an entry that is never opened whatever its format: an unusable name, a
    refusal, a skip the source decided."""
    record = _unread(source, entry, None)
    if record is not None and (entry.refused is not None or entry.skipped is not None
                               or record.failed):
        return record
    return None


def _expanded(source: Source, entry: Entry, previous: PreviousRecords,
              settings: ExtractionSettings):
    """The records of an entry that may be several documents or none as it is (a container, a
    compressed file, a file no format claims: :mod:`rag_pipeline.core.ingest.containers`)."""
    return extract_expanding_entry(entry.document_id, source.location(entry.document_id),
                                   entry.fingerprint,
                                   lambda: source.read(entry, settings.max_document_bytes),
                                   previous, settings)


def _member_of_listed(document_id: str, listed: set[str]) -> bool:
    """Whether ``document_id`` is a member of a listed container (``a.zip/x.md``)."""
    return any(container in listed for container in enclosing_ids(document_id))


def _unread(source: Source, entry: Entry, fmt: DocumentFormat | None) -> DocumentRecord | None:
    """The record of an entry that is never opened: an unusable name, a refusal, a skip."""
    shown = shown_file_name(entry.document_id)
    stem = PurePosixPath(shown).stem
    if shown != entry.document_id:  # bytes that are not UTF-8 in its name: one failed record
        return DocumentRecord(shown, shown_file_name(source.location(entry.document_id)), stem,
                              "", "", fmt.name if fmt else "", "", "", DocumentStatus.FAILED.value,
                              f"the file name is not valid UTF-8 ({shown}): rename the file",
                              source_fingerprint=entry.fingerprint)
    if entry.refused is not None:
        return DocumentRecord(shown, source.location(shown), stem, "", "", fmt.name if fmt else "",
                              "", "", DocumentStatus.FAILED.value, entry.refused,
                              source_fingerprint=entry.fingerprint)
    if entry.skipped is not None or fmt is None:
        return DocumentRecord(shown, source.location(shown), stem, "", "", "", "", "",
                              DocumentStatus.SKIPPED.value,
                              entry.skipped or skip_reason(entry.document_id),
                              source_fingerprint=entry.fingerprint)
    return None


def extract_entry(source: Source, entry: Entry,
                  settings: ExtractionSettings | None = None) -> list[DocumentRecord]:
    """Reads one entry; any failure is returned as a ``failed`` record with its reason, an
    entry no format reads as a ``skipped`` record (never opened)."""
    settings = settings or ExtractionSettings()
    if expands_name(entry.document_id) and _refused(source, entry) is None:
        return _expanded(source, entry, PreviousRecords(()), settings).records
    fmt = _format_of(entry.document_id)
    unread = _unread(source, entry, fmt)
    if unread is not None:
        return [unread]
    assert fmt is not None  # _unread answered every entry without a format
    location = source.location(entry.document_id)
    try:
        data = source.read(entry, settings.max_document_bytes)
    except ExtractionError as exc:
        return [_unreadable(entry, location, fmt, str(exc))]
    return records_from_bytes(entry.document_id, location, data, fmt, entry.fingerprint,
                              settings.max_document_seconds)


def _unreadable(entry: Entry, location: str, fmt: DocumentFormat, reason: str) -> DocumentRecord:
    extractor = fmt.extractor()
    return DocumentRecord(entry.document_id, location, PurePosixPath(entry.document_id).stem, "",
                          "", fmt.name, extractor.name, extractor.version,
                          DocumentStatus.FAILED.value, reason, source_fingerprint=entry.fingerprint)


def extract_document(path: Path, corpus_root: Path,
                     settings: ExtractionSettings | None = None) -> DocumentRecord:
    """Reads one file of a folder (see :func:`extract_entry`)."""
    return extract_entry(LocalSource(corpus_root), local_entry(path, corpus_root), settings)[0]


@dataclass(frozen=True)
class ExtractionResult:
    """The corpus's records, in id order, and what changed.

    Attributes:
        records: One per listed entry.
        extracted: Entries read and extracted this time (``ok`` or ``failed``).
        reused: Previous records kept because the entry's fingerprint (or bytes) and stamps
            match: ``ok`` ones, and failed ones not retried because nothing changed.
        moved: Of the reused records, those whose location changed (the corpus folder moved,
            or a rename): their ``path`` is updated, nothing is re-extracted.
        report: What this run added, changed, renamed, deleted, left and failed.
        not_retried: Failed records kept as they were: the entry did not change since it failed.
    """

    records: list[DocumentRecord]
    extracted: int
    reused: int
    moved: int = 0
    report: Reconciliation | None = None
    not_retried: int = 0

    @property
    def failed(self) -> list[DocumentRecord]:
        return [r for r in self.records if r.failed]

    @property
    def skipped(self) -> list[DocumentRecord]:
        return [r for r in self.records if r.skipped]

    @property
    def ok(self) -> list[DocumentRecord]:
        return [r for r in self.records if r.ok]


def _current_stamps(record: DocumentRecord, fmt: DocumentFormat) -> bool:
    return (record.format == fmt.name and record.extractor_version == fmt.extractor().version
            and record.pipeline_version == PIPELINE_VERSION)


def _relocated(record: DocumentRecord, document_id: str, location: str,
               fingerprint: str) -> DocumentRecord:
    """``record`` under another id or location (a rename, a moved folder), its content kept."""
    return dataclasses.replace(record, document_id=document_id, path=location,
                               source_fingerprint=fingerprint)


def _titled_by_name(record: DocumentRecord) -> bool:
    """Whether ``record``'s title is its file name's stem (no heading or title of its own): a
    rename changes what a fresh read titles it, and its sections, so it is read again."""
    return record.title == PurePosixPath(record.document_id).stem


def _within_limit(entry: Entry, settings: ExtractionSettings) -> bool:
    return entry.size is None or entry.size <= settings.max_document_bytes


def _reusable(old: DocumentRecord | None, entry: Entry, fmt: DocumentFormat,
              settings: ExtractionSettings) -> bool:
    """``old`` stands for the entry unopened: same fingerprint and stamps, within the size
    limit, and ``ok`` or failed and not to be retried (a size failure is always checked again:
    that costs one ``stat``, and the limit may have been raised; so is a document the run's
    OCR budget stopped)."""
    if old is None or old.source_fingerprint != entry.fingerprint or not _within_limit(entry, settings) \
            or not _current_stamps(old, fmt):
        return False
    return old.ok or (old.failed and kept_failed(old.error, settings))


_NOT_RETRIED = "not retried: unchanged since it failed: "
"""How a reconciliation row begins for a failed document (a file, or a member of a container
kept unread) whose bytes are as they were when it failed."""


def _read_again(was: DocumentRecord, record: DocumentRecord) -> str:
    """Why a document (a file or a container's member) whose bytes did not change was read
    again (its row says ``changed`` though nobody touched the file): an upgraded extractor or
    pipeline; ``""`` when its bytes changed, or it was read again after a failure."""
    if was.content_sha256 != record.content_sha256 or not was.ok:
        return ""
    if (was.format, was.extractor, was.extractor_version) != (record.format, record.extractor,
                                                              record.extractor_version):
        before = f"{was.extractor} {was.extractor_version}" if was.extractor else was.format
        return (f"the same bytes, read again by an upgraded extractor ({before} -> "
                f"{record.extractor} {record.extractor_version})")
    if was.pipeline_version != record.pipeline_version:
        return (f"the same bytes, read again by an upgraded pipeline ({was.pipeline_version} -> "
                f"{record.pipeline_version})")
    return ""


def _vanished_members(prior_ids: list[str], prior: Mapping[str, DocumentRecord], container: str,
                      listed: set[str]) -> dict[str, str]:
    """The read members of ``container`` before this run that it no longer holds, by their
    bytes' sha256 (the first of each): one whose bytes come back under another name was
    renamed (``prior_ids``: the previous ids, sorted, so a container's are one range)."""
    prefix = f"{container}/"
    gone: dict[str, str] = {}
    for document_id in prior_ids[bisect.bisect_left(prior_ids, prefix):]:
        if not document_id.startswith(prefix):
            break
        record = prior[document_id]
        if document_id not in listed and record.ok and record.content_sha256:
            gone.setdefault(record.content_sha256, document_id)
    return gone


def _not_retried(record: DocumentRecord) -> str:
    """The detail of ``record``'s reconciliation row when it is kept as it was: its failure
    (empty when it is not failed)."""
    return _NOT_RETRIED + (record.error or "") if record.failed else ""


def _check_not_gone(source: Source, listed: int, vanished: Sequence[str]) -> None:
    """Files listed but gone when read were deleted while the run read the corpus, and are
    reported deleted, unless the corpus itself went away meanwhile (a folder unmounted: its
    mount point is still a folder, now empty): it then lists fewer than half its entries.

    Raises:
        SourceError: If the corpus went away: nothing is published.
    """
    now = len(source.entries())
    if now < listed / 2:
        raise SourceError(
            f"the corpus {source.uri} went away while it was being read ({len(vanished)} of its "
            f"files were gone when read, and it now lists {now} of its {listed} entries: "
            "unmounted or moved?): nothing is published, the served index is as it was")


def extract_corpus(corpus: Path | Source, previous: Iterable[DocumentRecord] = (),
                   settings: ExtractionSettings | None = None) -> ExtractionResult:
    """Extracts every entry of ``corpus`` (a folder or a source), reusing previous records.

    A previous record is reused without opening the entry when the entry's fingerprint and the
    format's stamps match it; otherwise the entry is read, and a record whose bytes (sha256) are
    the same is still reused. A failed record is reused too while its entry is unchanged (retries
    back off until the file changes), unless ``settings.retry_failed`` (a file failed for its
    size is checked again on every run: that costs one ``stat``, and the limit may have been
    raised). A new id whose content is a vanished record's is a rename: the record moves (by
    fingerprint on a content-addressed source, else by sha256). Records are matched by document
    id, so a corpus folder that moved reuses every unchanged record with its ``path`` set to
    where the file is now.

    Raises:
        SourceError: If the source cannot be listed, or disappeared while it was read.
    """
    settings = settings or ExtractionSettings()
    for fmt in REGISTRY:  # per-run budgets (OCR seconds) start again
        fmt.start_run()
    source = LocalSource(corpus) if isinstance(corpus, Path) else corpus
    previous = PreviousRecords(previous)
    prior = {r.document_id: r for r in previous}
    prior_ids = sorted(prior)
    try:
        entries = source.entries()
        rows: list[Reconciled] = [Reconciled(Change.HIDDEN.value, shown_file_name(name),
                                             detail=HIDDEN_DETAIL) for name in source.hidden]
        listed = {shown_file_name(e.document_id) for e in entries}
        vanished = [r for r in prior.values() if r.ok and r.document_id not in listed
                    and not _member_of_listed(r.document_id, listed)]
        by_fingerprint = {r.source_fingerprint: r for r in vanished if r.source_fingerprint}
        by_digest = {r.content_sha256: r for r in vanished if r.content_sha256}
        taken: set[str] = set()
        records: list[DocumentRecord] = []
        extracted = reused = moved = not_retried = 0
        vanished: list[str] = []

        kept: set[str] = set()

        def keep(record: DocumentRecord, change: Change, previous_id: str = "",
                 detail: str = "") -> None:
            if record.document_id in kept:  # a key below a key that is an archive (S3): the
                # object and the archive's member would be two documents of one id
                rows.append(Reconciled(Change.FAILED.value, record.document_id, previous_id,
                                       "another document already has this id (a member of the "
                                       "container of that name): not indexed"))
                return
            kept.add(record.document_id)
            records.append(record)
            before = prior.get(record.document_id)
            left = f"; {LEFT_THE_INDEX}" if before is not None and before.ok else ""
            if record.skipped:
                rows.append(Reconciled(Change.SKIPPED.value, record.document_id,
                                       detail=(record.error or "") + left))
            elif record.failed:
                rows.append(Reconciled(Change.FAILED.value, record.document_id, previous_id,
                                       (detail or record.error or "") + left))
            else:
                rows.append(Reconciled(change.value, record.document_id, previous_id, detail))

        def rename_of(candidate: DocumentRecord | None, fmt: DocumentFormat) -> DocumentRecord | None:
            if candidate is None or candidate.document_id in taken or not _current_stamps(candidate, fmt):
                return None
            taken.add(candidate.document_id)
            return candidate

        plans = []
        for entry in entries:  # first what each entry needs, so the reads can be announced
            if expands_name(entry.document_id) and _refused(source, entry) is None:
                plans.append((entry, None, None, "expand", None))
                continue
            fmt = _format_of(entry.document_id)
            old = prior.get(shown_file_name(entry.document_id))
            twin = None
            if fmt is None or _unread(source, entry, fmt) is not None:
                action = "unread"
            elif _reusable(old, entry, fmt, settings):
                action = "reuse"
            elif old is None and source.content_addressed and _within_limit(entry, settings) and (
                    twin := rename_of(by_fingerprint.get(entry.fingerprint), fmt)) is not None:
                action = "read" if _titled_by_name(twin) else "rename"
            else:
                action = "read"
            plans.append((entry, fmt, old, action, twin))
        source.prefetch([entry for entry, _, _, action, _ in plans if action == "read"],
                        settings.max_document_bytes)
        for entry, fmt, old, action, twin in plans:
            if action == "expand":  # a container, a compressed or an unclaimed file
                found = _expanded(source, entry, previous, settings)
                extracted, reused, moved = (extracted + found.extracted, reused + found.reused,
                                            moved + found.moved)
                if found.extracted == 0:  # kept unread: its failures stand, as a file's do
                    not_retried += sum(record.failed for record in found.records)
                gone = _vanished_members(prior_ids, prior, shown_file_name(entry.document_id),
                                         {record.document_id for record in found.records})
                for record in found.records:
                    was = prior.get(record.document_id)
                    renamed_from = (gone.pop(record.content_sha256, "")
                                    if was is None and record.ok else "")
                    if renamed_from:  # a member's new name for its old bytes
                        taken.add(renamed_from)
                        keep(record, Change.RENAMED, renamed_from)
                        continue
                    kept_unread = found.extracted == 0 and was is not None
                    same = was is not None and (found.extracted == 0 or _same_reading(was, record))
                    keep(record, Change.ADDED if was is None else Change.UNCHANGED if same
                         else Change.CHANGED,
                         detail=_not_retried(record) if kept_unread else "" if same or was is None
                         else _read_again(was, record))
                continue
            if action == "unread":
                record = extract_entry(source, entry, settings)[0]
                keep(record, Change.UNCHANGED if old is not None and old.status == record.status
                     and old.error == record.error else Change.CHANGED if old else Change.ADDED)
                continue
            location = source.location(entry.document_id)
            if action == "reuse":
                if old.path != location:
                    old = dataclasses.replace(old, path=location)
                    moved += 1
                reused += 1
                not_retried += old.failed
                keep(old, Change.UNCHANGED, detail=_not_retried(old))
                continue
            if action == "rename":
                reused += 1
                moved += 1
                keep(_relocated(twin, entry.document_id, location, entry.fingerprint),
                     Change.RENAMED, twin.document_id)
                continue
            try:
                data = source.read(entry, settings.max_document_bytes)
            except FileVanishedError:
                vanished.append(entry.document_id)  # deleted while the run read the corpus
                continue
            except ExtractionError as exc:
                extracted += 1
                keep(_unreadable(entry, location, fmt, str(exc)), Change.CHANGED if old else Change.ADDED)
                continue
            digest = hashlib.sha256(data).hexdigest()
            if old is not None and old.ok and old.content_sha256 == digest and _current_stamps(old, fmt):
                if old.path != location:
                    moved += 1
                reused += 1
                keep(_relocated(old, entry.document_id, location, entry.fingerprint), Change.UNCHANGED)
                continue
            if old is None:
                twin = twin or rename_of(by_digest.get(digest), fmt)
                if twin is not None and not _titled_by_name(twin):
                    reused += 1
                    moved += 1
                    keep(_relocated(twin, entry.document_id, location, entry.fingerprint),
                         Change.RENAMED, twin.document_id)
                    continue
            extracted += 1
            renamed_from = twin.document_id if old is None and twin is not None else ""
            for record in records_from_bytes(entry.document_id, location, data, fmt, entry.fingerprint,
                                             settings.max_document_seconds):
                keep(record, Change.RENAMED if renamed_from else Change.CHANGED if old else
                     Change.ADDED, renamed_from,
                     detail=_read_again(old, record) if old is not None else "")
        source.still_there()
        if vanished:
            _check_not_gone(source, len(entries), vanished)
            listed -= {shown_file_name(document_id) for document_id in vanished}
    finally:
        source.close()
    rows.extend(deleted_rows(prior.values(), listed | {r.document_id for r in records}, taken))
    report = Reconciliation(source.uri, source.revision(),
                            tuple(sorted(rows, key=lambda r: (r.change, r.document_id))))
    return ExtractionResult(records, extracted, reused, moved, report, not_retried)
