"""One index partition (chunker x model) loaded for querying: its served generation.

Chunks, their vectors (as one float32 matrix, rows aligned with the chunks), the BM25 scorers
of every analyzer and the documents' titles, paths and page maps, all from the files of one
published generation (:mod:`rag_pipeline.core.index.generations`). Chunks, vectors and BM25
postings are memory-mapped copies of the generation's files (:mod:`rag_pipeline.core.index.mapped`):
a chunk's strings become Python objects only when a row is asked for, and the pages a question
never touches are never read, so serving 1.3 M chunks costs far less memory than their files.
The cache key is the generation, so a newly published one is picked up without restarting, and a
loaded one never changes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rag_pipeline.core.embedding.model_key import ModelKey
from rag_pipeline.core.index.ann import AnnIndex, AnnMismatchError
from rag_pipeline.core.index.ann_index import open_ann_index
from rag_pipeline.core.index.bm25 import Bm25Scorer, build_bm25_tables
from rag_pipeline.core.index.generations import Generation, current_generation, current_generations
from rag_pipeline.core.index.mapped import (
    ContentRows,
    mapped_bm25,
    mapped_columns,
    mapped_table,
    mapped_vectors,
)
from rag_pipeline.core.index.row_reads import StringColumn
from rag_pipeline.core.ingest import Anchor, TableSpan
from rag_pipeline.core.ingest.extracted import left_out, left_out_scopes
from rag_pipeline.core.storage.table_names import ANN_INDEX, BM25_TABLES, CHUNKS, DOCUMENTS, EMBEDDINGS
from rag_pipeline.core.storage.warehouse import IndexNotBuiltError, Warehouse
from rag_pipeline.core.text.analyzers import Analyzer
from rag_pipeline.core.text.terminal import exception_line

if TYPE_CHECKING:
    from rag_pipeline.core.index.access import AccessLabels

CHUNK_COLUMNS = ["chunk_id", "document_id", "section", "content", "text", "from", "to", "content_sha256"]
"""The chunks' columns a served partition maps."""


class UnknownPartitionError(Exception):
    """The requested chunker or model has no built partition."""


@dataclass(frozen=True)
class DocumentInfo:
    document_id: str
    title: str
    path: str
    format: str
    anchors: tuple[Anchor, ...]
    tables: tuple[TableSpan, ...] = ()
    content_sha256: str = ""
    """The sha256 of the bytes indexed: a viewer serves the original file only while it holds
    them (``""``: unknown, so no original is served)."""
    left_out: tuple[str, ...] = ()
    """What its extraction left out or may have read wrongly, in ``status``'s words
    (:func:`~rag_pipeline.core.ingest.extracted.left_out`): a citation of a passage it applies
    to says so (:meth:`left_out_at`)."""
    left_out_scopes: tuple[tuple[tuple[int, int], ...], ...] = ()
    """Per phrase of ``left_out``, the spans of the text it applies to (``()``, or none given:
    all of it)."""

    def left_out_at(self, start: int, end: int) -> tuple[str, ...]:
        """The ``left_out`` phrases that apply to the passage ``[start, end)``."""
        scopes = self.left_out_scopes or ((),) * len(self.left_out)
        return tuple(phrase for phrase, spans in zip(self.left_out, scopes, strict=True)
                     if not spans or any(s < end and start < e for s, e in spans))


class LazyAnn:
    """A partition's ANN index, opened the first time a question (or a report) asks for it: a
    partition the exact scan serves (under the crossover) never reads its index file, so a
    damaged one cannot touch its questions. Shared by the copies ``dataclasses.replace`` makes
    of a partition (labelled for access), so the file is opened once."""

    def __init__(self, opener: Callable[[], AnnIndex | None]) -> None:
        self._opener: Callable[[], AnnIndex | None] | None = opener
        self._index: AnnIndex | None = None
        self._lock = threading.Lock()

    @classmethod
    def of(cls, index: AnnIndex | None) -> LazyAnn:
        """An index already open (or none)."""
        return cls(lambda: index)

    @property
    def opened(self) -> bool:
        """Whether the index was asked for (and opened, or found unusable) already."""
        return self._opener is None

    def get(self) -> AnnIndex | None:
        with self._lock:
            if self._opener is not None:
                self._index, self._opener = self._opener(), None
            return self._index


@dataclass(frozen=True, eq=False)
class PartitionIndex:
    chunker: str
    model_key: str
    model_name: str
    model_fingerprint: str
    generation: str
    published_at: str
    chunk_ids: Sequence[str]
    document_ids: Sequence[str]
    sections: Sequence[str]
    contents: Sequence[str]
    texts: Sequence[str]
    starts: np.ndarray
    ends: np.ndarray
    content_hashes: Sequence[str]
    vectors: np.ndarray
    bm25: dict[Analyzer, Bm25Scorer]
    documents: dict[str, DocumentInfo]
    rows_by_content: ContentRows
    """Every row holding a content (by ``content_sha256``), in partition order."""
    ann_source: LazyAnn | None = None
    """Opens the generation's ANN index when :attr:`ann` is first read (None: it has none)."""
    access: AccessLabels | None = None
    """The readers of every row under ``[access]`` (:func:`rag_pipeline.core.index.access.labelled`);
    None: everyone reads everything."""
    corpus_ids: tuple[str, ...] = ()
    """Every document id of the generation, whatever its status (a failed member of an archive
    too): what a container holds, for its readers (:meth:`~rag_pipeline.core.config.access
    .AccessPolicy.readers_by_document`)."""
    documents_file: str = ""
    """The generation's ``documents`` file: what the served index says of every document (its
    failed and skipped ones too), read from the generation it serves, never a newer one."""

    def __len__(self) -> int:
        return len(self.chunk_ids)

    @property
    def ann(self) -> AnnIndex | None:
        """The generation's ANN index over ``vectors`` (checked against them), if it has one
        that can serve: opened on first use (a damaged or missing file is logged and is None)."""
        return None if self.ann_source is None else self.ann_source.get()

    def with_ann(self, ann: AnnIndex | None) -> PartitionIndex:
        """This partition served with ``ann`` as its ANN index (already open)."""
        return replace(self, ann_source=LazyAnn.of(ann))


def _bm25_scorers(warehouse: Warehouse, files: dict[str, str], chunker: str, chunk_ids: StringColumn,
                  texts: StringColumn) -> dict[Analyzer, Bm25Scorer]:
    """One scorer per analyzer: memory-mapped from the generation's four BM25 tables
    (:func:`rag_pipeline.core.index.mapped.mapped_bm25`); an analyzer an older index has no
    statistics for is built in memory from the chunk texts."""
    scorers = mapped_bm25(warehouse, {name: files[name] for name in BM25_TABLES}, chunk_ids, chunker)
    for analyzer in Analyzer:
        if analyzer not in scorers:
            scorers[analyzer] = Bm25Scorer.from_tables(build_bm25_tables(list(chunk_ids), list(texts),
                                                                         analyzer), analyzer)
    return {analyzer: scorers[analyzer] for analyzer in Analyzer}


def served_generation(warehouse: Warehouse, chunker: str, model_key: str) -> Generation:
    """The published generation of a partition, or a clear error naming what is built."""
    generation = current_generation(warehouse, chunker, model_key)
    if generation is not None:
        return generation
    published = current_generations(warehouse)
    if not published:
        raise IndexNotBuiltError.in_folder(warehouse.data_dir)
    chunkers = sorted({g.chunker for g in published})
    if chunker not in chunkers:
        raise UnknownPartitionError(f"no published index for chunker {chunker!r}; published: "
                                    f"{', '.join(chunkers)}")
    models = sorted(g.model for g in published if g.chunker == chunker)
    raise UnknownPartitionError(f"no published index for {chunker} x {model_key!r}; published "
                                f"models: {', '.join(models)}")


def load_partition(warehouse: Warehouse | Path, chunker: str, model_key: str,
                   location: str | None = None) -> PartitionIndex:
    """The partition's served generation, from the process cache when it is already loaded.
    Reading ``CURRENT.json`` is the only I/O when nothing was published since.

    Args:
        warehouse: The handle on the tables (a data folder is made into one, with
            ``location``, for callers that hold none).
    """
    if not isinstance(warehouse, Warehouse):
        warehouse = Warehouse(Path(warehouse), location)
    for attempt in range(3):
        generation = served_generation(warehouse, chunker, model_key)
        try:
            return _load(str(warehouse.data_dir.resolve()), warehouse.location, generation)
        except FileNotFoundError:
            # A generation two publishes old may be collected between reading CURRENT.json
            # and its files; the newer CURRENT.json is then whole.
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _ann_or_none(warehouse: Warehouse, generation: Generation, vectors) -> AnnIndex | None:
    """The generation's ANN index, or None: when it has none, and when its file or its table
    is damaged or missing, or the index does not fit the vectors (logged; the exact scan
    serves every question, and the next ``rag-pipeline index`` rebuilds it)."""
    if ANN_INDEX not in generation.files:
        return None
    try:
        return open_ann_index(warehouse, generation.files[ANN_INDEX], vectors)
    except AnnMismatchError as exc:
        logging.getLogger(__name__).warning("%s", exc)
    except FileNotFoundError as exc:
        served = current_generation(warehouse, generation.chunker, generation.model)
        why = ("is missing" if served is not None and served.id == generation.id
               else "was collected: a newer generation is published")
        logging.getLogger(__name__).warning(
            "the ANN index file %s %s: the exact scan serves until the next `rag-pipeline index` "
            "rebuilds it", exc, why)
    except (OSError, pa.ArrowException, KeyError, IndexError, ValueError) as exc:
        logging.getLogger(__name__).warning(
            "the ANN index table %s cannot be read (%s): the exact scan serves until the next "
            "`rag-pipeline index` rebuilds it", warehouse.full_path(generation.files[ANN_INDEX]),
            exception_line(exc))
    return None


def _document_info(row: dict) -> DocumentInfo:
    """A ``documents`` row (an ``ok`` one) as the index keeps it."""
    notes = [(n["name"], n["value"]) for n in row.get("notes") or ()]
    return DocumentInfo(row["document_id"], row["title"], row["path"], row["format"],
                        tuple(Anchor(**a) for a in row["anchors"] or ()),
                        tuple(TableSpan(**{**t, "rows": tuple(t["rows"])})
                              for t in row.get("tables") or ()),
                        row["content_sha256"] or "", tuple(left_out(notes)),
                        tuple(left_out_scopes(notes)))


@lru_cache(maxsize=4)
def _load(data_dir: str, location: str, generation: Generation) -> PartitionIndex:
    warehouse = Warehouse(Path(data_dir), location)
    missing = generation.missing_tables()
    if missing:
        raise IndexNotBuiltError(f"generation {generation.id} of {generation.chunker} x "
                                 f"{generation.model} has no {', '.join(missing)}: re-run "
                                 "`rag-pipeline index`")
    files = generation.files
    mapped = mapped_columns(warehouse, files[CHUNKS], CHUNK_COLUMNS)
    chunks = mapped.table
    chunker, model_key = generation.chunker, generation.model
    chunk_ids = mapped.strings("chunk_id")
    vector_ids = mapped_table(warehouse, files[EMBEDDINGS], ["chunk_id"]).column("chunk_id").combine_chunks()
    found = pc.index_in(chunk_ids.arrow(), value_set=vector_ids)
    if found.null_count:
        raise IndexNotBuiltError(f"{found.null_count} chunks of {chunker} have no vector in "
                                 f"{model_key} (generation {generation.id}): re-run "
                                 "`rag-pipeline index`")
    stamps = sorted(tuple(pair.values()) for pair in warehouse.read_file(
        files[EMBEDDINGS], columns=["model_name", "model_fingerprint"]).group_by(
        ["model_name", "model_fingerprint"]).aggregate([]).to_pylist())
    if len(stamps) > 1:
        raise IndexNotBuiltError(f"partition {chunker} x {model_key} mixes models: {stamps}")
    (model_name, fingerprint), = stamps or [(key.name, key.fingerprint)
                                            for key in [ModelKey.parse(model_key)]]
    if str(ModelKey(model_name, fingerprint)) != model_key:
        raise IndexNotBuiltError(f"partition {model_key} holds vectors stamped "
                                 f"{ModelKey(model_name, fingerprint)}")
    document_columns = ["document_id", "title", "path", "format", "anchors", "status",
                        "content_sha256"]
    stored = pq.read_schema(warehouse.full_path(files[DOCUMENTS]), filesystem=warehouse.fs).names
    # A documents file written before tables (or notes) had none.
    document_columns += [name for name in ("tables", "notes") if name in stored]
    rows = warehouse.read_file(files[DOCUMENTS], columns=document_columns).to_pylist()
    documents = {row["document_id"]: _document_info(row) for row in rows if row["status"] == "ok"}
    order = found.to_numpy().astype(np.int64)
    # Stored in chunk order (every build writes them so): the file's own order, mapped as is.
    in_order = len(order) == len(vector_ids) and np.array_equal(order, np.arange(len(order)))
    vectors = mapped_vectors(warehouse, files[EMBEDDINGS], None if in_order else order)
    texts = mapped.strings("text")
    content_hashes = mapped.strings("content_sha256")
    index = PartitionIndex(
        chunker=chunker, model_key=model_key, model_name=model_name, model_fingerprint=fingerprint,
        generation=generation.id, published_at=generation.published_at,
        chunk_ids=chunk_ids, document_ids=mapped.strings("document_id"),
        sections=mapped.strings("section"), contents=mapped.strings("content"),
        texts=texts,
        starts=chunks.column("from").to_numpy(), ends=chunks.column("to").to_numpy(),
        content_hashes=content_hashes,
        vectors=vectors,
        bm25=_bm25_scorers(warehouse, files, chunker, chunk_ids, texts),
        documents=documents,
        rows_by_content=ContentRows(content_hashes),
        ann_source=LazyAnn(lambda: _ann_or_none(warehouse, generation, vectors)),
        corpus_ids=tuple(row["document_id"] for row in rows),
        documents_file=files[DOCUMENTS],
    )
    # The load scanned whole columns (ids, hashes): unmap those pages and hand the decoding's
    # freed buffers back to the system (at 1.3 M chunks: 0.16 GB mapped, 0.3 GB Arrow kept).
    mapped.release_pages()
    pa.default_memory_pool().release_unused()
    return index
