"""What the index holds, read from the published DuckDB file: counts per partition, failures, staleness."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from rag_pipeline.core.index.ann import CROSSOVER_ROWS, MIN_SELF_RECALL, DensePath, choose_path
from rag_pipeline.core.index.generations import (
    CURRENT,
    GENERATIONS,
    Generation,
    generation_age_seconds,
)
from rag_pipeline.core.ingest import REGISTRY, DocumentStatus
from rag_pipeline.core.ingest.extracted import LEFT_OUT_NOTES, left_out
from rag_pipeline.core.ingest.formats import chunked_format
from rag_pipeline.core.ingest.reconcile import Change, Reconciliation, report_from_table
from rag_pipeline.core.storage.table_names import DOCUMENTS, RECONCILIATION
from rag_pipeline.core.storage.versions import PIPELINE_VERSION
from rag_pipeline.core.storage.warehouse import (
    POINTER_FILE,
    CorruptFileError,
    IndexNotBuiltError,
    TableVersion,
    Warehouse,
)
from rag_pipeline.core.text.terminal import exception_line


@dataclass(frozen=True)
class PartitionStatus:
    chunker: str
    model: str
    chunks: int
    vectors: int
    stale_rows: int
    generation: str
    """The served generation (see :mod:`rag_pipeline.core.index.generations`)."""
    published_at: str
    dense_path: DensePath = DensePath.EXACT
    """How questions' dense side is served: the exact scan, or the ANN index the generation
    publishes (from ``CROSSOVER_ROWS`` chunks on, :func:`rag_pipeline.core.index.ann.choose_path`)."""

    def age_seconds(self, now: float | None = None) -> float:
        return generation_age_seconds(self.published_at, now)


@dataclass(frozen=True)
class IndexStatus:
    documents_ok: int
    documents_failed: list[tuple[str, str]]
    stale_documents: list[str]
    partitions: list[PartitionStatus]
    bm25_terms: dict[tuple[str, str], int]
    without_chunks: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    """``(document_id, chunkers)`` of ``ok`` documents that yield no chunk under those chunkers
    (for example a file of headings only): they are in the index but can never be found."""
    documents_skipped: list[tuple[str, str]] = field(default_factory=list)
    """``(document_id, reason)`` of files no format reads."""
    low_confidence_pages: list[tuple[str, int, float]] = field(default_factory=list)
    """``(document_id, page, confidence)`` of OCR pages under their format's confidence floor
    (the ``document_pages`` table's ``flagged`` rows)."""
    left_out: list[tuple[str, list[str]]] = field(default_factory=list)
    """``(document_id, phrases)`` of ``ok`` documents read with part left out
    (:func:`documents_left_out`)."""


def _tables(con) -> set[str]:
    return {r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()}


def row_counts(warehouse: Warehouse) -> dict[str, list[tuple]]:
    """The row counts a new user checks first, straight from the DuckDB views; a document whose
    id another one took (:func:`_id_taken`) counted among the failed, as ``status`` lists it."""
    import duckdb

    queries = {
        "documents": "select status, count(*) from documents group by all order by all",
        "chunks": "select chunker, count(*) from chunks group by all order by all",
        "embeddings": "select chunker, model, count(*) from embeddings group by all order by all",
        "bm25_terms": "select chunker, analyzer, count(*) from bm25_terms group by all "
                      "order by all",
    }
    with duckdb.connect(str(warehouse.db_path), read_only=True) as con:
        present = _tables(con)
        counts = {name: con.execute(sql).fetchall() for name, sql in queries.items()
                  if name in present}
        if taken := len(_id_taken(con, present)) if "documents" in present else 0:
            by_status = dict(counts["documents"])
            failed = DocumentStatus.FAILED.value
            by_status[failed] = by_status.get(failed, 0) + taken
            counts["documents"] = sorted(by_status.items())
        return counts


def over_the_window(warehouse: Warehouse) -> list[tuple[str, int, int]]:
    """Per chunker, how many of its chunks are longer than the default model's word-piece
    window (the ``truncated`` column: the model reads only their first word-pieces) and how
    many chunks it has; only chunkers with any."""
    import duckdb

    with duckdb.connect(str(warehouse.db_path), read_only=True) as con:
        if "chunks" not in _tables(con):
            return []
        return con.execute("select chunker, count(*) filter (where truncated), count(*) from chunks "
                           "group by all having count(*) filter (where truncated) > 0 "
                           "order by all").fetchall()


def last_reconciliation(warehouse: Warehouse) -> tuple[Reconciliation, str] | None:
    """The last documents run's report and when it ran (None before the first run)."""
    table = warehouse.read_or_none(RECONCILIATION)
    return report_from_table(table) if table is not None else None


def reading_unserved(warehouse: Warehouse) -> bool:
    """Whether the last documents run's reading is in no served generation: a ``rag-pipeline
    index`` stopped after its documents run, or a documents run launched by hand, read changes
    no index has published yet."""
    from rag_pipeline.core.index.generations import current_generations

    version = warehouse.version(DOCUMENTS)
    return version is not None and version.file not in {
        generation.files.get(DOCUMENTS) for generation in current_generations(warehouse)}


def served_documents(warehouse: Warehouse) -> dict[str, str]:
    """``document id -> content sha256`` of the ``ok`` documents the last published generation
    serves (none before the first)."""
    from rag_pipeline.core.index.generations import current_generations

    served = max(current_generations(warehouse), key=lambda g: g.published_at, default=None)
    if served is None or DOCUMENTS not in served.files:
        return {}
    table = warehouse.read_file(served.files[DOCUMENTS],
                                columns=["document_id", "content_sha256", "status"])
    return {document: digest for document, digest, status in zip(
        table.column("document_id").to_pylist(), table.column("content_sha256").to_pylist(),
        table.column("status").to_pylist(), strict=True) if status == DocumentStatus.OK.value}


def documents_not_indexed(warehouse: Warehouse) -> list[tuple[str, str, str]]:
    """``(status, document_id, reason)`` of every failed and skipped document of the published
    DuckDB file, failed first, by id; a document whose id another one took
    (:func:`_id_taken`) is among the failed."""
    import duckdb

    with duckdb.connect(str(warehouse.db_path), read_only=True) as con:
        views = _tables(con)
        if "documents" not in views:
            return []
        rows = con.execute(
            "select status, document_id, coalesce(error, '') from documents where status in "
            "(?, ?) order by status, document_id",
            [DocumentStatus.FAILED.value, DocumentStatus.SKIPPED.value]).fetchall()
        taken = [(DocumentStatus.FAILED.value, d, reason) for d, reason in _id_taken(con, views)]
    return sorted([*rows, *taken])


def _id_taken(con, views: set[str]) -> list[tuple[str, str]]:
    """``(document_id, reason)`` of the documents the last run listed but could not keep
    because another document has their id (an S3 object ``a.zip/x.md`` beside the archive
    ``a.zip`` holding ``x.md``): the documents table holds the other one, so only the
    reconciliation says the first failed."""
    if RECONCILIATION not in views:
        return []
    return con.execute(
        f"select r.document_id, r.detail from {RECONCILIATION} r join documents d "
        "on d.document_id = r.document_id where r.change = ? and d.status = ? order by 1",
        [Change.FAILED.value, DocumentStatus.OK.value]).fetchall()


def documents_left_out(warehouse: Warehouse) -> list[tuple[str, list[str]]]:
    """``(document_id, phrases)`` of every ``ok`` document of the published DuckDB file whose
    notes say part of it was left out or may be read wrongly
    (:data:`~rag_pipeline.core.ingest.extracted.LEFT_OUT_NOTES`), by id."""
    import duckdb

    with duckdb.connect(str(warehouse.db_path), read_only=True) as con:
        return _left_out(con) if "documents" in _tables(con) else []


def _left_out(con) -> list[tuple[str, list[str]]]:
    rows = con.execute(
        "select document_id, [(n.name, n.value) for n in notes if list_contains(?, n.name)] "
        "from documents where status = ? order by document_id",
        [list(LEFT_OUT_NOTES), DocumentStatus.OK.value]).fetchall()
    return [(document_id, left_out(notes)) for document_id, notes in rows if notes]


def index_status(warehouse: Warehouse, crossover: int = CROSSOVER_ROWS) -> IndexStatus:
    """What the published DuckDB file says; ``crossover`` is the size from which a partition
    with an ANN index is served by it."""
    import duckdb

    if not warehouse.db_path.is_file():
        raise IndexNotBuiltError.in_folder(warehouse.data_dir)
    current_extractors = {fmt.name: fmt.extractor().version for fmt in REGISTRY}
    with duckdb.connect(str(warehouse.db_path), read_only=True) as con:
        views = _tables(con)
        if "documents" not in views:
            raise IndexNotBuiltError.in_folder(warehouse.data_dir)
        served = {(c, m): (g, p) for c, m, g, p in con.execute(
            "select chunker, model, generation, published_at from generations").fetchall()} \
            if "generations" in views else {}
        docs = con.execute("select document_id, status, error, format, extractor_version, "
                           "pipeline_version from documents order by document_id").fetchall()
        chunk_counts = dict(con.execute(
            "select chunker, count(*) from chunks group by chunker").fetchall()) \
            if "chunks" in views else {}
        # An index of this version (an HNSW graph of an earlier one has no nprobe and is not served).
        with_ann = {(c, m) for c, m in con.execute(
            "select chunker, model from ann_index where measured_recall >= ? and nprobe is not null",
            [MIN_SELF_RECALL]).fetchall()} if "ann_index" in views and "nprobe" in {
            name for name, *_ in con.execute("describe ann_index").fetchall()} else set()
        partitions = []
        if "embeddings" in views:
            for chunker, model, vectors, stale in con.execute(
                    "select chunker, model, count(*), count(*) filter (where pipeline_version "
                    "<> ?) from embeddings group by all order by all",
                    [PIPELINE_VERSION]).fetchall():
                generation, published_at = served.get((chunker, model), ("", ""))
                chunks = chunk_counts.get(chunker, 0)
                partitions.append(PartitionStatus(
                    chunker, model, chunks, vectors, stale, generation, published_at,
                    choose_path(chunks, (chunker, model) in with_ann, crossover)))
        without_chunks = [(d, tuple(chunkers)) for d, kind, chunkers in con.execute(
            "select d.document_id, d.format, list(p.chunker order by p.chunker) "
            "from documents d, (select distinct chunker from chunks) p "
            "where d.status = 'ok' and not exists (select 1 from chunks c "
            "where c.chunker = p.chunker and c.document_id = d.document_id) "
            "group by all order by all").fetchall()
            if chunked_format(kind)] if "chunks" in views else []
        built_from = _documents_built_from(warehouse, con, views)
        without_chunks = [(d, kept) for d, chunkers in without_chunks
                          if (kept := tuple(c for c in chunkers
                                            if c not in built_from or d in built_from[c]))]
        terms = {(c, a): n for c, a, n in con.execute(
            "select chunker, analyzer, count(*) from bm25_terms group by all").fetchall()} \
            if "bm25_terms" in views else {}
        partly = _left_out(con)
        taken = _id_taken(con, views)
        low_confidence = [(d, p, c) for d, p, c in con.execute(
            "select document_id, page, ocr_confidence from document_pages where flagged "
            "order by all").fetchall()] if "document_pages" in views else []
    return IndexStatus(
        documents_ok=sum(1 for d in docs if d[1] == DocumentStatus.OK),
        documents_failed=sorted([*((d[0], d[2]) for d in docs if d[1] == DocumentStatus.FAILED),
                                 *taken]),
        documents_skipped=[(d[0], d[2]) for d in docs if d[1] == DocumentStatus.SKIPPED],
        # A document refused before any extractor read it (a file name that is not UTF-8)
        # carries no extractor stamp: it is failed, not stale.
        stale_documents=[d[0] for d in docs if d[1] != DocumentStatus.SKIPPED
                         and not (d[1] == DocumentStatus.FAILED and not d[4])
                         and (d[5] != PIPELINE_VERSION or d[4] != current_extractors.get(d[3]))],
        partitions=partitions, bm25_terms=terms, without_chunks=without_chunks,
        low_confidence_pages=low_confidence, left_out=partly)


def _documents_built_from(warehouse: Warehouse, con, views: set[str]) -> dict[str, set[str]]:
    """For each chunker whose served generations were built from documents other than the
    published ones (a build between the two, or one killed while it published), the ids its
    generations were built from: a newer document without chunks there is not built yet, not
    one that yields no chunk."""
    if "generations" not in views or "published_files" not in views:
        return {}
    current = {file for (file,) in con.execute(
        "select file from published_files where \"table\" = 'documents'").fetchall()}
    rows = con.execute("select chunker, documents_file from generations").fetchall()
    up_to_date = {chunker for chunker, file in rows if file in current}
    found: dict[str, set[str]] = {}
    for chunker, file in rows:
        if chunker not in up_to_date:
            ids = warehouse.read_file(file, columns=["document_id"]).column("document_id")
            found.setdefault(chunker, set()).update(ids.to_pylist())
    return found


@dataclass(frozen=True)
class UnhealthyFile:
    """A pointer, generation manifest or derived file that cannot be used: the partition it
    belongs to (its folder, e.g. ``_generations/chunker=header/model=m@0000abcd``), why, and
    what repairs it."""

    partition: str
    reason: str
    fix: str = "run `rag-pipeline index`: it rebuilds the file"


def unhealthy_files(warehouse: Warehouse) -> list[UnhealthyFile]:
    """Every ``_latest.json``, ``CURRENT.json`` and manifest of the warehouse that does not
    parse as what it must hold, sorted by file; then every table file a served generation
    names that is missing or damaged (:func:`_damaged_tables`), and every derived file it uses
    that no longer matches the digest recorded when it was built (an ANN index file, a copy in
    ``map_cache/``)."""
    found = _unparsable_files(warehouse)
    if not found:
        found += _damaged_tables(warehouse) + _damaged_derived_files(warehouse)
    return found


RESTORE_TABLE = ("restore the file from a backup (table files never change and are named by "
                 "their content): `ask` and `serve` cannot load this generation until then")


def _damaged_tables(warehouse: Warehouse) -> list[UnhealthyFile]:
    """Each table file of a served generation that is missing, is no Parquet file, or holds
    other than the rows its manifest recorded (read from its footer alone); the ANN index's
    is :func:`_damaged_derived_files`' (the exact scan serves without it, `index` rebuilds it)."""
    from rag_pipeline.core.index.generations import current_generations, generation_dir
    from rag_pipeline.core.storage.table_names import ANN_INDEX

    found = []
    for generation in current_generations(warehouse):
        folder = generation_dir(generation.chunker, generation.model)
        for table, file in sorted(generation.files.items()):
            if table == ANN_INDEX:
                continue
            shown = warehouse.full_path(file)
            try:
                rows = warehouse.parquet_rows(file)
            except (OSError, pa.ArrowException) as exc:
                found.append(UnhealthyFile(folder, f"the {table} table file {shown} cannot be "
                                                   f"read ({exception_line(exc)})", RESTORE_TABLE))
                continue
            if rows is None:
                found.append(UnhealthyFile(folder, f"the {table} table file {shown} is missing",
                                           RESTORE_TABLE))
            elif table in generation.rows and rows != generation.rows[table]:
                found.append(UnhealthyFile(folder, f"the {table} table file {shown} holds {rows} "
                                                   f"rows, its generation recorded "
                                                   f"{generation.rows[table]}", RESTORE_TABLE))
    return found


def _damaged_derived_files(warehouse: Warehouse) -> list[UnhealthyFile]:
    from rag_pipeline.core.index.ann_index import graph_damage
    from rag_pipeline.core.index.generations import current_generations, generation_dir
    from rag_pipeline.core.index.mapped import damaged_copies
    from rag_pipeline.core.storage.table_names import ANN_INDEX

    found = []
    for generation in current_generations(warehouse):
        folder = generation_dir(generation.chunker, generation.model)
        if ANN_INDEX in generation.files:
            table = generation.files[ANN_INDEX]
            try:
                graph = warehouse.read_file(table, columns=["graph"]).column("graph")[0].as_py()
            except (OSError, pa.ArrowException, KeyError, IndexError) as exc:
                found.append(UnhealthyFile(folder, (
                    f"the ANN index table {warehouse.full_path(table)} cannot be read "
                    f"({exception_line(exc)}): the exact "
                    "scan serves until the next `rag-pipeline index` rebuilds it")))
                graph = None
            damage = graph_damage(warehouse, graph) if graph else None
            if graph and warehouse.get_file_size(graph) is None:
                damage = (f"the ANN index file {warehouse.full_path(graph)} is missing: the "
                          "exact scan serves until the next `rag-pipeline index` rebuilds it")
            if damage is not None:
                found.append(UnhealthyFile(folder, damage))
        found += [UnhealthyFile(folder, reason, "nothing: the next load (`ask`, `serve`) makes "
                                                "the copy again; or delete it")
                  for reason in damaged_copies(warehouse, set(generation.files.values()))]
    return found


def _unparsable_files(warehouse: Warehouse) -> list[UnhealthyFile]:
    found = []
    for info in sorted(warehouse.list_files(), key=lambda i: i.path):
        relative = warehouse.relative(info.path)
        if relative.startswith(f"{GENERATIONS}/") and info.base_name.endswith(".json"):
            parse = Generation.from_json
        elif info.base_name == POINTER_FILE:
            parse = TableVersion.from_json
        else:
            continue
        try:
            warehouse.parse_json(relative, parse)
        except CorruptFileError as exc:
            folder = relative.rsplit("/", 1)[0]
            found.append(UnhealthyFile(folder, str(exc), _pointer_fix(warehouse, folder,
                                                                      info.base_name)))
    return found


def _pointer_fix(warehouse: Warehouse, folder: str, name: str) -> str:
    """What repairs the unreadable ``name`` in ``folder``."""
    if name == POINTER_FILE:
        return (f"delete {warehouse.full_path(f'{folder}/{name}')} and run `rag-pipeline "
                "index`: the table is built again (its unchanged files are reused)")
    if name != CURRENT:
        return (f"delete {warehouse.full_path(f'{folder}/{name}')}: the record of an earlier "
                "generation, which nothing serves")
    manifests = sorted(info.base_name for info in warehouse.list_files(folder)
                       if info.base_name.endswith(".json") and info.base_name != CURRENT)
    for manifest in reversed(manifests):
        try:
            if warehouse.parse_json(f"{folder}/{manifest}", Generation.from_json) is not None:
                return (f"copy {warehouse.full_path(f'{folder}/{manifest}')} (the newest whole "
                        f"generation) over {warehouse.full_path(f'{folder}/{name}')}")
        except CorruptFileError:
            continue
    return (f"delete {warehouse.full_path(f'{folder}/{name}')} and run `rag-pipeline index`: "
            "the partition is built and published again")
