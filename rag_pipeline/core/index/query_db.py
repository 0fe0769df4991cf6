"""The DuckDB file users query: a snapshot of every published table, replaced atomically.

``<data_dir>/rag.duckdb`` holds real tables (not views over paths), so a copied or moved data
folder reads its own rows and no character in its path matters. Each publish copies the current
file, replaces only the tables whose published files changed, and renames the copy over the
original: a reader that has the file open keeps reading the snapshot it opened, a new reader
gets the new one, and a reader never blocks the writer (nobody writes the published file).
Publishers take a lock on ``.rag.duckdb.lock`` so two runs never lose each other's update.

What a table shows: ``chunks``, ``embeddings`` and the BM25 tables show the *served*
generations (for chunks and BM25, the newest generation of each chunker); ``documents`` and the
evaluation tables show their latest version. ``generations`` lists the served generations and
``published_files`` the file behind every partition.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from rag_pipeline.core.index import GENERATION_TABLES
from rag_pipeline.core.index.generations import Generation, current_generations
from rag_pipeline.core.runtime.processes import pid_alive
from rag_pipeline.core.storage.table_names import (
    ACCESS,
    ANN_INDEX,
    BM25_TABLES,
    CHUNKS,
    DOCUMENTS,
    EMBEDDINGS,
)
from rag_pipeline.core.storage.warehouse import IndexNotBuiltError, Warehouse

SOURCES_TABLE = "published_files"
GENERATIONS_TABLE = "generations"
SOURCE_MOVED_ATTEMPTS = 3
"""How often a publication reads the tables' pointers when a file vanished under it."""

Source = tuple[str, str]
"""(partition as sorted JSON, file relative to the warehouse root)."""


@dataclass(frozen=True)
class PublishStats:
    tables_replaced: list[str]
    tables_dropped: list[str]
    rebuilt_from_scratch: bool


def _partition_json(partition: dict[str, str]) -> str:
    return json.dumps(partition, sort_keys=True)


def _served(warehouse: Warehouse, pending: Generation | None) -> list[Generation]:
    """The current generation of every partition, ``pending`` (about to be pointed at) in
    place of its partition's."""
    generations = current_generations(warehouse)
    if pending is None:
        return generations
    others = [g for g in generations if (g.chunker, g.model) != (pending.chunker, pending.model)]
    return sorted([*others, pending], key=lambda g: (g.chunker, g.model))


def published_sources(warehouse: Warehouse,
                      pending: Generation | None = None) -> dict[str, list[Source]]:
    """For each table, the files a user should see, by partition (with ``pending`` served)."""
    generations = _served(warehouse, pending)
    sources: dict[str, list[Source]] = {}
    newest_by_chunker = {}
    for generation in sorted(generations, key=lambda g: g.published_at):
        newest_by_chunker[generation.chunker] = generation
        for table in (EMBEDDINGS, ANN_INDEX):
            if table in generation.files:
                sources.setdefault(table, []).append(
                    (_partition_json({"chunker": generation.chunker, "model": generation.model}),
                     generation.files[table]))
    for chunker, generation in newest_by_chunker.items():
        for table in (CHUNKS, *BM25_TABLES, ACCESS):
            if table in generation.files:
                sources.setdefault(table, []).append((_partition_json({"chunker": chunker}),
                                                      generation.files[table]))
    for version in warehouse.versions():
        if version.table in {t.name for t in GENERATION_TABLES} and version.table != DOCUMENTS:
            continue
        sources.setdefault(version.table, []).append((_partition_json(version.partition),
                                                      version.file))
    sources[GENERATIONS_TABLE] = [
        (_partition_json({"chunker": g.chunker, "model": g.model}), g.id) for g in generations]
    return {table: sorted(rows) for table, rows in sorted(sources.items())}


@contextmanager
def _publish_lock(db_path: Path) -> Iterator[None]:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with open(db_path.parent / f".{db_path.name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def _build_location(tmp: Path) -> Iterator[Path]:
    """Where DuckDB may write the new file: ``tmp`` itself, or a file in the system's temporary
    folder when ``tmp``'s path holds a ``?``. DuckDB names its WAL by putting ``.wal`` before
    the first ``?`` of a database path (the start of a URL's query string to it), so a ``?``
    anywhere in the data folder's path sends the WAL into a folder that does not exist. The
    file built elsewhere is then copied to ``tmp`` byte for byte."""
    if "?" not in str(tmp):
        yield tmp
        return
    with tempfile.TemporaryDirectory(prefix="rag-duckdb-") as folder:
        yield Path(folder) / tmp.name


def query_db_in_step(warehouse: Warehouse) -> bool:
    """Whether ``rag.duckdb`` shows exactly the files that are published (False: no readable
    file, or other files: a ``kill -9`` between its swap and the pointer, a warehouse restored
    under it)."""
    existing = _existing_sources(warehouse.db_path)
    return existing is not None and existing == published_sources(warehouse)


def _existing_sources(db_path: Path) -> dict[str, list[Source]] | None:
    """The sources recorded in the published file; None when there is no readable file."""
    import duckdb

    if not db_path.is_file():
        return None
    try:
        with duckdb.connect(str(db_path), read_only=True) as con:
            rows = con.execute(f'select "table", partition, file from {SOURCES_TABLE}').fetchall()
    except duckdb.Error:
        return None
    out: dict[str, list[Source]] = {}
    for table, partition, file in rows:
        out.setdefault(table, []).append((partition, file))
    return {table: sorted(rows) for table, rows in out.items()}


def _table_with_partitions(warehouse: Warehouse, sources: list[Source]) -> pa.Table:
    parts = []
    for partition_json, file in sources:
        table = warehouse.read_file(file)
        for index, (key, value) in enumerate(json.loads(partition_json).items()):
            table = table.add_column(index, key, pa.array([value] * table.num_rows, pa.string()))
        parts.append(table)
    return pa.concat_tables(parts, promote_options="default")


def _generations_table(warehouse: Warehouse, pending: Generation | None) -> pa.Table:
    generations = _served(warehouse, pending)
    strings = {
        "chunker": [g.chunker for g in generations], "model": [g.model for g in generations],
        "generation": [g.id for g in generations],
        "published_at": [g.published_at for g in generations],
        "documents_file": [g.files[DOCUMENTS] for g in generations],
        "chunks_file": [g.files[CHUNKS] for g in generations],
        "embeddings_file": [g.files[EMBEDDINGS] for g in generations],
    }
    table = pa.table({name: pa.array(values, pa.string()) for name, values in strings.items()})
    table = table.add_column(4, "chunks", pa.array([g.rows[CHUNKS] for g in generations],
                                                   pa.int64()))
    return table.add_column(5, "vectors", pa.array([g.rows[EMBEDDINGS] for g in generations],
                                                   pa.int64()))


def _remove_dead_writers_files(db_path: Path) -> None:
    """Temporary copies left by a publisher that was killed (its pid is gone)."""
    for stray in db_path.parent.glob(f".{db_path.name}.*.tmp*"):
        pid = stray.name[len(db_path.name) + 2:].split(".", 1)[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            stray.unlink(missing_ok=True)


def _replace_table(con, name: str, data: pa.Table) -> None:
    con.register("_incoming", data)
    try:
        con.execute(f'CREATE OR REPLACE TABLE "{name}" AS SELECT * FROM _incoming')
    finally:
        con.unregister("_incoming")


def refresh_query_db(warehouse: Warehouse) -> PublishStats:
    """What a *reader* (``status`` with ``--warehouse``) may do: bring ``rag.duckdb`` up to date
    with a warehouse that holds a published generation. A warehouse with none (a wrong path, an
    empty bucket) never replaces the snapshot.

    Raises:
        IndexNotBuiltError: If the warehouse has no published generation; the snapshot is left
            as it was.
    """
    if not current_generations(warehouse):
        raise IndexNotBuiltError(f"the warehouse {warehouse.location} holds no published "
                                 f"generation (a wrong --warehouse?): {warehouse.db_path} was "
                                 "left as it was")
    return publish_query_db(warehouse)


def publish_query_db(warehouse: Warehouse, pending: Generation | None = None) -> PublishStats:
    """Brings ``rag.duckdb`` up to date with what is published (and ``pending``, the
    generation about to be published: :func:`~rag_pipeline.core.index.generations.publish`
    calls this before it writes the pointer), replacing it atomically; a failure (a full disk)
    leaves the file as it was and no temporary file behind.

    A ``.wal`` beside the published file means a user's read-write session wrote to it: the
    snapshot is then rebuilt from the warehouse (never copied with what the WAL would replay)
    and the stale WAL is removed before the swap, so the new file never meets another file's
    WAL. A table file replaced and deleted between the read of its pointer and of the file
    (past its garbage grace, or by hand) makes the pointers be read again, up to
    :data:`SOURCE_MOVED_ATTEMPTS` times."""
    db_path = warehouse.db_path
    with _publish_lock(db_path):
        _remove_dead_writers_files(db_path)
        attempt = 1
        while True:
            try:
                return _publish(warehouse, pending)
            except FileNotFoundError:
                if attempt == SOURCE_MOVED_ATTEMPTS:
                    raise
                attempt += 1


def _publish(warehouse: Warehouse, pending: Generation | None) -> PublishStats:
    """One attempt of :func:`publish_query_db`, under its lock."""
    import duckdb

    db_path = warehouse.db_path
    wal = Path(f"{db_path}.wal")
    wanted = published_sources(warehouse, pending)
    existing = None if wal.exists() else _existing_sources(db_path)
    scratch = existing is None
    existing = existing or {}
    changed = [t for t in wanted if existing.get(t) != wanted[t] or scratch]
    dropped = [t for t in existing if t not in wanted]
    if not changed and not dropped and not scratch:
        return PublishStats([], [], False)
    tmp = db_path.parent / f".{db_path.name}.{os.getpid()}.tmp"
    tmp.unlink(missing_ok=True)
    try:
        with _build_location(tmp) as build:
            if not scratch:
                shutil.copyfile(db_path, build)
            with duckdb.connect(str(build)) as con:
                for table in dropped:
                    con.execute(f'DROP TABLE IF EXISTS "{table}"')
                for table in changed:
                    data = (_generations_table(warehouse, pending) if table == GENERATIONS_TABLE
                            else _table_with_partitions(warehouse, wanted[table]))
                    _replace_table(con, table, data)
                _replace_table(con, SOURCES_TABLE, pa.table({
                    "table": [t for t, rows in wanted.items() for _ in rows],
                    "partition": [p for rows in wanted.values() for p, _ in rows],
                    "file": [f for rows in wanted.values() for _, f in rows],
                }))
                con.execute("CHECKPOINT")
            if build != tmp:
                shutil.copyfile(build, tmp)
        with tmp.open("rb") as handle:
            os.fsync(handle.fileno())
        wal.unlink(missing_ok=True)
        tmp.replace(db_path)
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)
    return PublishStats(changed, dropped, scratch)
