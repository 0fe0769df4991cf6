"""Builds the index tables (documents, chunks, embeddings, BM25 statistics) as Arrow tables.

Each function takes what its table is made from and returns the table plus the figures a run
reports. Nothing here knows where tables are stored or who calls it.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rag_pipeline.core.chunking.strategies import (
    ChunkingSettings,
    ChunkingStrategy,
    chunk_document,
    offset_errors,
)
from rag_pipeline.core.embedding.models import TextEmbedder
from rag_pipeline.core.embedding.vectors import check_stamps, vector_matrix
from rag_pipeline.core.embedding.wordpieces import KnownWordpieces, WordpieceCounter
from rag_pipeline.core.index.bm25 import build_bm25_tables
from rag_pipeline.core.ingest import Anchor, DocumentRecord, Section, TableSpan, format_named
from rag_pipeline.core.ingest.extracted import DocumentPage
from rag_pipeline.core.ingest.formats import chunked_format
from rag_pipeline.core.storage.row_tables import rows_table, table_rows
from rag_pipeline.core.storage.table_names import BM25_TABLES
from rag_pipeline.core.storage.versions import PIPELINE_VERSION
from rag_pipeline.core.text.analyzers import Analyzer

DOCUMENTS_SCHEMA = pa.schema([
    ("document_id", pa.string()), ("path", pa.string()), ("title", pa.string()),
    ("canonical_text", pa.large_string()), ("n_chars", pa.int64()),
    ("content_sha256", pa.string()), ("format", pa.string()), ("extractor", pa.string()),
    ("extractor_version", pa.string()), ("status", pa.string()), ("error", pa.string()),
    ("sections", pa.list_(pa.struct([("title", pa.string()), ("start", pa.int64()),
                                     ("end", pa.int64()), ("level", pa.int32())]))),
    ("anchors", pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64()),
                                    ("locator", pa.string())]))),
    ("notes", pa.list_(pa.struct([("name", pa.string()), ("value", pa.string())]))),
    ("pipeline_version", pa.string()),
    ("tables", pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64()),
                                   ("header", pa.string()), ("header_end", pa.int64()),
                                   ("rows", pa.list_(pa.int64()))]))),
    ("pages", pa.list_(pa.struct([("page", pa.int32()), ("source", pa.string()),
                                  ("ocr_confidence", pa.float64()), ("chars", pa.int64()),
                                  ("flagged", pa.bool_())]))),
])


def documents_table(records: Sequence[DocumentRecord]) -> pa.Table:
    return rows_table(records, DOCUMENTS_SCHEMA, computed={
        "n_chars": lambda r: len(r.canonical_text),
        "sections": lambda r: [dataclasses.asdict(s) for s in r.sections],
        "anchors": lambda r: [dataclasses.asdict(a) for a in r.anchors],
        "tables": lambda r: [dataclasses.asdict(t) for t in r.tables],
        "notes": lambda r: [{"name": name, "value": value} for name, value in r.notes],
        "pages": lambda r: [dataclasses.asdict(p) for p in r.pages],
    })


DOCUMENT_PAGES_SCHEMA = pa.schema([
    ("document_id", pa.string()), ("page", pa.int32()), ("source", pa.string()),
    ("ocr_confidence", pa.float64()), ("chars", pa.int64()), ("flagged", pa.bool_()),
])


def document_pages_table(records: Sequence[DocumentRecord]) -> pa.Table:
    """One row per page of every ``ok`` paged document (PDF), its record's pages as the reader
    saw them: text layer or OCR, the OCR confidence, characters, flagged under the confidence
    floor."""
    rows = [(r.document_id, page) for r in records if r.ok for page in r.pages]
    return pa.table({
        "document_id": [document_id for document_id, _ in rows],
        "page": [page.page for _, page in rows],
        "source": [page.source for _, page in rows],
        "ocr_confidence": [page.ocr_confidence for _, page in rows],
        "chars": [page.chars for _, page in rows],
        "flagged": [page.flagged for _, page in rows],
    }, schema=DOCUMENT_PAGES_SCHEMA)


SOURCE_ENTRIES_SCHEMA = pa.schema([("document_id", pa.string()), ("source_fingerprint", pa.string())])


def source_entries_table(records: Sequence[DocumentRecord]) -> pa.Table:
    """Each record's source fingerprint (what says, without reading it, that an entry has not
    changed: a file's stat, an object's ETag, a blob id). Kept out of ``documents`` so that a
    touched but unchanged file leaves the documents table, and all built from it, as it was."""
    kept = [r for r in records if r.source_fingerprint]
    return pa.table({"document_id": [r.document_id for r in kept],
                     "source_fingerprint": [r.source_fingerprint for r in kept]},
                    schema=SOURCE_ENTRIES_SCHEMA)


def document_records(table: pa.Table, source_entries: pa.Table | None = None) -> list[DocumentRecord]:
    """The table's rows as records, each with its fingerprint from ``source_entries`` (see
    :func:`source_entries_table`) when given; a table written before a structure column
    existed reads as having none."""
    fingerprints = dict(zip(source_entries.column("document_id").to_pylist(),
                            source_entries.column("source_fingerprint").to_pylist(), strict=True)
                        ) if source_entries is not None else {}
    return [dataclasses.replace(
        r, source_fingerprint=fingerprints.get(r.document_id, ""),
        sections=tuple(Section(**s) for s in r.sections),
        anchors=tuple(Anchor(**a) for a in r.anchors),
        tables=tuple(TableSpan(**{**t, "rows": tuple(t["rows"])}) for t in r.tables),
        notes=tuple((n["name"], n["value"]) for n in r.notes),
        pages=tuple(DocumentPage(**p) for p in r.pages))
        for r in table_rows(table, DocumentRecord)]


class OffsetError(Exception):
    """A chunk's content is not exactly ``canonical[from:to]``: a bug, never a data problem."""


@dataclass(frozen=True)
class ChunkStats:
    chunks: int
    truncated: int
    embedded_wordpieces: int
    header_wordpieces: int
    without_chunks: tuple[str, ...] = ()
    """Ids of ``ok`` documents that yield no chunk (for example only headings)."""

    @property
    def header_share(self) -> float:
        return self.header_wordpieces / self.embedded_wordpieces if self.embedded_wordpieces else 0.0


CHUNKS_SCHEMA = pa.schema([
    ("chunk_id", pa.string()), ("document_id", pa.string()), ("ordinal", pa.int32()),
    ("section", pa.string()), ("header", pa.string()), ("text", pa.string()),
    ("content", pa.string()), ("from", pa.int64()), ("to", pa.int64()), ("page", pa.int32()),
    ("last_page", pa.int32()), ("content_sha256", pa.string()), ("text_sha256", pa.string()),
    ("wordpieces", pa.int32()), ("header_wordpieces", pa.int32()), ("truncated", pa.bool_()),
    ("tokenizer", pa.string()), ("pipeline_version", pa.string()),
])
"""The chunks table's columns: declared, so a chunker with no chunks (every document failed,
or an emptied corpus) writes string columns, not Arrow's null type."""


def embeddings_schema(dimension: int) -> pa.Schema:
    """The embeddings table's columns for vectors of ``dimension`` (declared, as
    :data:`CHUNKS_SCHEMA`, for a partition without rows)."""
    return pa.schema([
        ("chunk_id", pa.string()), ("text_sha256", pa.string()),
        ("vector", pa.list_(pa.float32(), dimension)), ("model_name", pa.string()),
        ("model_fingerprint", pa.string()), ("dimension", pa.int32()),
        ("pipeline_version", pa.string()),
    ])


def chunks_table(documents: Sequence[DocumentRecord], strategy: ChunkingStrategy,
                 counter: WordpieceCounter | KnownWordpieces,
                 settings: ChunkingSettings | None = None) -> tuple[pa.Table, ChunkStats]:
    """Chunks every ``ok`` document of a :attr:`~rag_pipeline.core.ingest.formats.base.
    DocumentFormat.chunked` format; word-pieces are counted on ``text`` (what is embedded).

    ``page`` and ``last_page`` are the 1-based page a chunk starts on (the one its citation
    names) and the last page it runs on to, as its format reports them
    (:meth:`DocumentFormat.page_span`); null for a format without pages."""
    chunks = []
    spans: list[tuple[int, int] | None] = []
    without_chunks = []
    for doc in documents:
        if not doc.ok or not chunked_format(doc.format):
            continue
        cuts = [a.start for a in doc.anchors] if format_named(doc.format).cut_at_anchors else []
        doc_chunks = chunk_document(doc.document_id, doc.title, doc.canonical_text, strategy,
                                    settings, doc.sections, cuts, doc.tables)
        if not doc_chunks:
            without_chunks.append(doc.document_id)
        bad = offset_errors(doc.canonical_text, doc_chunks)
        if bad:
            raise OffsetError(f"{len(bad)} chunk(s) of {doc.document_id} do not slice exactly: "
                              f"{bad[:3]}")
        chunks.extend(doc_chunks)
        doc_format = format_named(doc.format)
        spans.extend(doc_format.page_span(doc.anchors, c.start, c.end) for c in doc_chunks)
    wordpieces = counter.count([c.text for c in chunks])
    headers = counter.count_plain([c.header for c in chunks]) if strategy.header else [0] * len(chunks)
    table = pa.table({
        "chunk_id": [c.chunk_id for c in chunks],
        "document_id": [c.document_id for c in chunks],
        "ordinal": pa.array([c.ordinal for c in chunks], pa.int32()),
        "section": [c.section for c in chunks],
        "header": [c.header for c in chunks],
        "text": [c.text for c in chunks],
        "content": [c.content for c in chunks],
        "from": pa.array([c.start for c in chunks], pa.int64()),
        "to": pa.array([c.end for c in chunks], pa.int64()),
        "page": pa.array([span[0] if span else None for span in spans], pa.int32()),
        "last_page": pa.array([span[1] if span else None for span in spans], pa.int32()),
        "content_sha256": [c.content_sha256 for c in chunks],
        "text_sha256": [c.text_sha256 for c in chunks],
        "wordpieces": pa.array(wordpieces, pa.int32()),
        "header_wordpieces": pa.array(headers, pa.int32()),
        "truncated": [counter.truncated(n) for n in wordpieces],
        "tokenizer": [counter.spec.key] * len(chunks),
        "pipeline_version": [PIPELINE_VERSION] * len(chunks),
    }, schema=CHUNKS_SCHEMA)
    stats = ChunkStats(len(chunks), sum(counter.truncated(n) for n in wordpieces),
                       sum(wordpieces), sum(headers), tuple(without_chunks))
    return table, stats


@dataclass(frozen=True)
class EmbeddingStats:
    """Where each row's vector came from: ``reused + shared + embedded + duplicates == rows``."""

    rows: int
    reused: int
    """Rows whose text already had a vector in this partition."""
    shared: int
    """Rows whose text had a vector from another partition of the same model, or from an
    unfinished run's checkpoint."""
    embedded: int
    """Distinct texts that went through the model."""
    duplicates: int
    """Rows whose text is another row's text in this run (embedded once)."""
    removed: int
    seconds: float

    @property
    def chunks_per_second(self) -> float:
        return self.embedded / self.seconds if self.seconds > 0 else 0.0


CHECKPOINT_TEXTS = 256
"""The fewest texts of a checkpoint group (a Parquet part of the vector cache)."""
GROUP_ROUNDS = 8
"""A checkpoint group of an embedder of one lane holds at least this many times the texts it
works on at once (``texts_at_once``: a Ray cluster's CPUs x its shard size), so a wide engine
has work for every worker and waits for its last shards only once a group. (An embedder of
several lanes begins the next group while one ends, and keeps groups of ``least``.)"""


def checkpoint_group_texts(texts_at_once: int, least: int = CHECKPOINT_TEXTS) -> int:
    """Texts in a checkpoint group of an embedder of one lane that works on ``texts_at_once``
    texts at once; never fewer than ``least``."""
    return max(least, GROUP_ROUNDS * texts_at_once)


def embeddings_table(chunks: pa.Table, previous: pa.Table | None, embedder: TextEmbedder,
                     progress: Callable[[int, int], None] | None = None,
                     known: Mapping[str, np.ndarray] | None = None,
                     checkpoint: Callable[[list[str], np.ndarray], None] | None = None,
                     checkpoint_every: int = CHECKPOINT_TEXTS) -> tuple[pa.Table, EmbeddingStats]:
    """One unit vector per chunk. A chunk whose embedded text (by sha256) already has a vector
    in ``previous`` (this partition) or in ``known`` (same model, elsewhere) reuses it; each
    other distinct text goes through the model once, batched by its ``wordpieces`` when the
    chunks carry that column. Fresh vectors are handed to ``checkpoint`` every
    ``checkpoint_every`` texts (an embedder of one lane: :func:`checkpoint_group_texts` of its
    ``texts_at_once``, when more), so a killed run's work can be reused by the next: in order,
    while an embedder with several lanes embeds the next group (``progress`` is then called
    from its threads, one call at a time)."""
    spec = embedder.spec
    own: dict[str, np.ndarray] = {}
    if previous is not None:
        check_stamps(previous, spec, "the stored partition")
        own = dict(zip(previous.column("text_sha256").to_pylist(), vector_matrix(previous),
                       strict=True))
    known = known or {}
    texts = chunks.column("text").to_pylist()
    shas = chunks.column("text_sha256").to_pylist()
    wordpieces = (chunks.column("wordpieces").to_pylist() if "wordpieces" in chunks.column_names
                  else None)
    missing = sorted({sha: i for i, sha in enumerate(shas)
                      if sha not in own and sha not in known}.items())
    if wordpieces:
        # Longest first across all the texts to embed (ties by digest), so the checkpoint
        # groups are cut from one length order and the embedder's batches inside them are
        # those of one ``embed`` over every text: each pads to nearly its own length.
        missing.sort(key=lambda item: -min(int(wordpieces[item[1]]), spec.max_tokens))
    fresh: dict[str, np.ndarray] = {}
    started = time.perf_counter()
    overlapping = getattr(embedder, "lanes", 1) > 1
    at_once = getattr(embedder, "texts_at_once", 0)
    # Lanes overlap the groups; an embedder without them (a Ray cluster) gets wider groups.
    size = checkpoint_every if overlapping else checkpoint_group_texts(at_once, checkpoint_every)
    groups = [missing[begin:begin + size] for begin in range(0, len(missing), size)]
    for group, vectors in zip(groups, _embedded_groups(embedder, texts, wordpieces, groups,
                                                       progress, overlapping, at_once),
                              strict=True):
        fresh.update({sha: vector for (sha, _), vector in zip(group, vectors, strict=True)})
        if checkpoint is not None:
            checkpoint([sha for sha, _ in group], vectors)
    seconds = time.perf_counter() - started

    def vector_of(sha: str) -> np.ndarray:
        return own[sha] if sha in own else known[sha] if sha in known else fresh[sha]

    vectors = np.stack([vector_of(sha) for sha in shas]).astype(np.float32) if shas else \
        np.zeros((0, spec.dimension), np.float32)
    n = len(shas)
    table = pa.table({
        "chunk_id": chunks.column("chunk_id"),
        "text_sha256": chunks.column("text_sha256"),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()),
                                                    spec.dimension),
        "model_name": [spec.name] * n,
        "model_fingerprint": [spec.fingerprint] * n,
        "dimension": pa.array([spec.dimension] * n, pa.int32()),
        "pipeline_version": [PIPELINE_VERSION] * n,
    }, schema=embeddings_schema(spec.dimension))
    reused = sum(1 for sha in shas if sha in own)
    shared = sum(1 for sha in shas if sha not in own and sha in known)
    previous_shas = set(own)
    stats = EmbeddingStats(rows=n, reused=reused, shared=shared, embedded=len(missing),
                           duplicates=n - reused - shared - len(missing),
                           removed=len(previous_shas - set(shas)), seconds=seconds)
    return table, stats


def _embedded_groups(embedder: TextEmbedder, texts: list[str], wordpieces: list[int] | None,
                     groups: list[list[tuple[str, int]]],
                     progress: Callable[[int, int], None] | None, overlapping: bool,
                     at_once: int) -> Iterator[np.ndarray]:
    """Each group's vectors, in order (a group is ``(sha, position in texts)`` pairs).

    ``overlapping`` (an embedder of several lanes: sessions that each run a batch) begins the
    next group once a group has no more than ``at_once`` texts left (a batch a lane): the next
    group's batches take the lanes its last batches leave free, and run while the caller
    checkpoints it; one group at most runs ahead. A group that fails begins no further group,
    and one that has begun ahead stops after the batches it is running (so does every group
    when the caller stops reading). ``progress(done, total)`` counts the texts of every group."""
    total = sum(len(group) for group in groups)
    done = 0
    counting = threading.Lock()
    stopping = threading.Event()

    def embed_group(group: list[tuple[str, int]],
                    near_end: threading.Event | None = None) -> np.ndarray:
        counted = 0
        last_texts = len(group) - at_once

        def group_progress(finished: int, _total: int) -> None:
            nonlocal counted, done
            if stopping.is_set():
                raise _GroupsStopped
            with counting:
                done += finished - counted
                counted = finished
                if progress is not None:
                    progress(done, total)
            if near_end is not None and finished >= last_texts:
                near_end.set()

        options = {"wordpieces": [wordpieces[i] for _, i in group]} if wordpieces else {}
        return embedder.embed([texts[i] for _, i in group], progress=group_progress, **options)

    if not overlapping or len(groups) < 2:
        for group in groups:
            yield embed_group(group)
        return
    with ThreadPoolExecutor(2, thread_name_prefix="embed-group") as ahead:

        def begin(group: list[tuple[str, int]]) -> tuple[Future, threading.Event]:
            near_end = threading.Event()
            future = ahead.submit(embed_group, group, near_end)
            future.add_done_callback(lambda _: near_end.set())
            return future, near_end

        try:
            running, near_end = begin(groups[0])
            for following in groups[1:]:
                near_end.wait()
                if running.done() and running.exception() is not None:
                    break
                queued = begin(following)
                yield running.result()
                running, near_end = queued
            yield running.result()
        finally:
            stopping.set()


class _GroupsStopped(Exception):
    """Raised inside a group's progress to end its ``embed`` early: a group before it failed,
    or the caller stopped reading the groups."""


def bm25_stats_tables(chunks: pa.Table,
                      analyzers: Sequence[Analyzer] = tuple(Analyzer)) -> dict[str, pa.Table]:
    """The BM25 tables of a chunker, one block of rows per analyzer (column ``analyzer``).
    BM25 indexes each chunk's ``text``, the same text the dense side embeds."""
    ids = chunks.column("chunk_id").to_pylist()
    texts = chunks.column("text").to_pylist()
    parts: dict[str, list[pa.Table]] = {name: [] for name in BM25_TABLES}
    for analyzer in analyzers:
        built = build_bm25_tables(ids, texts, analyzer)
        for name, table in zip(BM25_TABLES, (built.terms, built.chunks, built.postings,
                                             built.params), strict=True):
            parts[name].append(table.append_column(
                "analyzer", pa.array([analyzer.value] * table.num_rows, pa.string())))
    return {name: pa.concat_tables(tables) for name, tables in parts.items()}
