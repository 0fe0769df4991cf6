"""Memory-mapped copies of a generation's table files: what a serving process loads at scale.

A Parquet file is compressed and encoded: reading it decodes every row into the process's own
memory, so a partition of 1.3 M chunks would cost gigabytes of heap in every serving process
(and again on every swap). The loader instead maps uncompressed copies of the columns it serves
(Arrow IPC for the chunks' strings, ``.npy`` for the float32 vectors and the BM25 matrix): the
operating system pages in only what a question touches (a hit's text, the shortlist's vectors,
the posting lists of the question's terms) and shares the pages between processes.

The copies are made once per table file, streamed batch by batch (never the whole file in
memory), into ``map_cache/`` of the data folder, named after the file they copy: table files are
content-named and immutable, so a copy is never stale. Each copy is written to a temporary name
and renamed, so a crash or a second process never leaves half a copy under the real name.

A copy's size and digest are recorded beside it when it is made (``.<name>.digest``) and
checked before it is mapped: a copy truncated or altered since (a mapped page past the end of a
truncated file kills the process with SIGBUS) is made again. When the data folder cannot be
written (mounted read-only), the copies are made in the system's temporary folder instead, and
a warning says so.
"""

from __future__ import annotations

import hashlib
import json
import logging
import mmap
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rag_pipeline.core.index.bm25 import Bm25Scorer, posting_weights
from rag_pipeline.core.index.row_reads import FileRows, MappedFile, StringColumn, random_access_map
from rag_pipeline.core.storage.full_disk import naming_a_full_disk
from rag_pipeline.core.storage.table_names import (
    BM25_CHUNKS,
    BM25_PARAMS,
    BM25_POSTINGS,
    BM25_TABLES,
    BM25_TERMS,
)
from rag_pipeline.core.storage.warehouse import IndexNotBuiltError, Warehouse
from rag_pipeline.core.text.analyzers import Analyzer

__all__ = ["MAP_CACHE_DIR", "ContentRows", "MappedColumns", "collect_copies", "copy_damage", "delete_copies",
           "damaged_copies", "mapped_bm25", "mapped_columns", "mapped_table", "mapped_vectors",
           "parquet_batches"]

MAP_CACHE_DIR = "map_cache"
"""Under the data folder: the memory-mappable copies, by table file."""
BATCH_ROWS = 65_536
"""Rows per batch while a copy is streamed (bounds the memory a copy costs)."""


def cache_path(warehouse: Warehouse, file: str, tag: str) -> Path:
    """Where the copy ``tag`` of table ``file`` lives (``tag`` names what was copied)."""
    return warehouse.data_dir / MAP_CACHE_DIR / f"{file.replace('/', '+')}.{tag}"


def collect_copies(data_dir: Path, referenced: set[str], grace_seconds: float,
                   folders: tuple[str, ...]) -> tuple[int, int]:
    """Deletes the local copies in ``folders`` of the data folder (mapped copies, object-store
    graphs) whose table file is not in ``referenced``, and their temporaries, once older than
    ``grace_seconds``; returns how many files and bytes. A copy is named after its file
    (:func:`cache_path`; a graph by its file's name), so every swap left one behind before."""
    is_referenced = _copy_of(referenced)
    now = time.time()
    return _delete_copies(data_dir, folders, lambda path, mtime: not is_referenced(path)
                          and now - mtime >= grace_seconds)


def delete_copies(data_dir: Path, files: Sequence[str], folders: tuple[str, ...]) -> tuple[int, int]:
    """Deletes the local copies in ``folders`` of the data folder of the table files ``files``
    (deleted from the warehouse), and their temporaries, now; returns how many files and
    bytes. A process that still maps one keeps its pages until it lets them go."""
    is_deleted = _copy_of(files)
    return _delete_copies(data_dir, folders, lambda path, mtime: is_deleted(path))


def _copy_of(files: Iterable[str]) -> Callable[[Path], bool]:
    """Whether a local copy (or its temporary, or its digest record) is one of ``files``'."""
    files = tuple(files)
    prefixes = tuple(f"{file.replace('/', '+')}." for file in files)
    names = {Path(file).name for file in files}

    def of(path: Path) -> bool:
        name = path.name.lstrip(".")
        return name.startswith(prefixes) or name in names
    return of


def _delete_copies(data_dir: Path, folders: tuple[str, ...],
                   chosen: Callable[[Path, float], bool]) -> tuple[int, int]:
    deleted, size = 0, 0
    for folder in folders:
        root = data_dir / folder
        if not root.is_dir():
            continue
        for path in root.iterdir():
            if not path.is_file():
                continue
            stat = path.stat()
            if not chosen(path, stat.st_mtime):
                continue
            path.unlink(missing_ok=True)
            deleted, size = deleted + 1, size + stat.st_size
    return deleted, size


def _digest_record(path: Path) -> Path:
    return path.with_name(f".{path.name}.digest")


def _file_digest(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "blake2b").hexdigest()


def copy_damage(path: Path) -> str | None:
    """Why the copy at ``path`` is not the one that was made (its size or digest differs from
    the record written beside it), or None: whole, or made without a record."""
    try:
        record = json.loads(_digest_record(path).read_text(encoding="utf-8"))
        size, digest = int(record["size"]), str(record["blake2b"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        actual = path.stat().st_size
    except OSError:
        return None
    if actual != size:
        return f"the map cache copy {path} holds {actual} bytes, {size} when it was made"
    if _file_digest(path) != digest:
        return f"the map cache copy {path} differs from the copy that was made (its digest)"
    return None


def damaged_copies(warehouse: Warehouse, files: set[str]) -> list[str]:
    """What :func:`copy_damage` says of each existing copy of one of ``files``."""
    folder = warehouse.data_dir / MAP_CACHE_DIR
    prefixes = tuple(f"{file.replace('/', '+')}." for file in files)
    if not folder.is_dir():
        return []
    return [damage for path in sorted(folder.iterdir())
            if path.name.startswith(prefixes) and (damage := copy_damage(path)) is not None]


def _writable(folder: Path) -> bool:
    """Whether files can be made in ``folder`` (or, while it does not exist, in the nearest
    folder above it that does)."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return os.access(folder, os.W_OK)


def _elsewhere(path: Path) -> Path:
    """Where the copy ``path`` is made when its data folder cannot be written."""
    data_dir = path.parent.parent
    tag = hashlib.blake2b(str(data_dir.resolve()).encode(), digest_size=6).hexdigest()
    return Path(tempfile.gettempdir()) / f"rag-pipeline-{MAP_CACHE_DIR}-{tag}" / path.name


_warned: set[Path] = set()


def write_once(path: Path, write: Callable[[Path], None]) -> Path:
    """``path``, written by ``write`` (to a temporary name, then renamed, its size and digest
    recorded) unless it exists whole; a damaged copy is made again. In a data folder that cannot
    be written, the copy is made in the system's temporary folder (:func:`_elsewhere`)."""
    if path.is_file() and copy_damage(path) is None:
        return path
    if path.is_file():
        logging.getLogger(__name__).warning("%s: made again", copy_damage(path))
    if not _writable(path.parent):
        fallback = _elsewhere(path)
        if fallback.parent not in _warned:
            _warned.add(fallback.parent)
            logging.getLogger(__name__).warning(
                "the data folder %s cannot be written: its map cache is made in %s instead",
                path.parent.parent, fallback.parent)
        path = fallback
        if path.is_file() and copy_damage(path) is None:
            return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    record_tmp = path.with_name(f".{path.name}.{os.getpid()}.digest.tmp")
    try:
        with naming_a_full_disk("to make the map cache copy", path):
            write(tmp)
            record_tmp.write_text(json.dumps({"size": tmp.stat().st_size,
                                              "blake2b": _file_digest(tmp)}), encoding="utf-8")
            record_tmp.replace(_digest_record(path))
            tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
        record_tmp.unlink(missing_ok=True)
    return path


def parquet_batches(warehouse: Warehouse, file: str, columns: list[str],
                    dictionary: Sequence[str] = ()) -> Iterator[pa.RecordBatch]:
    """The file's ``columns`` batch by batch (``dictionary`` columns dictionary-encoded, as
    Parquet stores them)."""
    with warehouse.fs.open_input_file(warehouse.full_path(file)) as source:
        reader = pq.ParquetFile(source, read_dictionary=list(dictionary))
        yield from reader.iter_batches(batch_size=BATCH_ROWS, columns=columns)


def mapped_table(warehouse: Warehouse, file: str, columns: list[str]) -> pa.Table:
    """The ``columns`` of a table file, from its uncompressed Arrow IPC copy mapped into memory
    (the buffers are the mapped pages: no row is decoded into the process)."""
    return mapped_columns(warehouse, file, columns).table


@dataclass(frozen=True)
class MappedColumns:
    """A table mapped from its Arrow IPC copy, and the file its buffers lie in."""

    table: pa.Table
    file: MappedFile
    pages: mmap.mmap
    """The map the table's buffers lie in."""

    def strings(self, name: str) -> StringColumn:
        """Column ``name`` (a string column), its values read from the file one at a time."""
        return StringColumn(self.table.column(name), self.file)

    def release_pages(self) -> None:
        """Unmaps from the process the pages reads have mapped so far (a load's scans of whole
        columns); they stay in the page cache, and a later read maps them again."""
        if hasattr(mmap, "MADV_DONTNEED"):
            self.pages.madvise(mmap.MADV_DONTNEED)


def mapped_columns(warehouse: Warehouse, file: str, columns: list[str]) -> MappedColumns:
    """:func:`mapped_table`, with the file its buffers lie in (:class:`MappedColumns`)."""
    tag = hashlib.blake2b(",".join(columns).encode(), digest_size=6).hexdigest() + ".arrow"

    def write(tmp: Path) -> None:
        with warehouse.fs.open_input_file(warehouse.full_path(file)) as source:
            schema = pq.ParquetFile(source).schema_arrow
        selected = pa.schema([schema.field(name) for name in columns])
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, selected) as writer:
            for batch in parquet_batches(warehouse, file, columns):
                writer.write_batch(batch)

    path = write_once(cache_path(warehouse, file, tag), write)
    pages = random_access_map(path)
    buffer = pa.py_buffer(pages)
    return MappedColumns(pa.ipc.open_file(buffer).read_all(), MappedFile.open(path, buffer.address), pages)


def mapped_vectors(warehouse: Warehouse, file: str, rows: np.ndarray | None = None) -> np.ndarray:
    """The ``vector`` column of an embeddings file as a read-only memory-mapped float32 matrix.

    Args:
        warehouse: Where the file is.
        file: The embeddings file.
        rows: For each output row, the file row it holds (the chunks' order); None keeps the
            file's order.

    Returns:
        An ``(n, dimension)`` matrix mapped from its ``.npy`` copy.
    """
    order = None if rows is None else np.asarray(rows, np.int64)
    tag = "vectors.npy" if order is None else (
        f"vectors-{hashlib.blake2b(order.tobytes(), digest_size=8).hexdigest()}.npy")

    def write(tmp: Path) -> None:
        with warehouse.fs.open_input_file(warehouse.full_path(file)) as source:
            meta = pq.ParquetFile(source)
            n, width = meta.metadata.num_rows, meta.schema_arrow.field("vector").type.list_size
        if order is not None and len(order) != n:
            raise ValueError(f"{len(order)} rows asked of {file}, which holds {n}")
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(n, width))
        destination = None if order is None else np.empty(n, np.int64)
        if destination is not None:
            destination[order] = np.arange(n)
        start = 0
        for batch in parquet_batches(warehouse, file, ["vector"]):
            block = np.asarray(batch.column(0).flatten().to_numpy(), np.float32).reshape(-1, width)
            if destination is None:
                out[start:start + len(block)] = block
            else:
                out[destination[start:start + len(block)]] = block
            start += len(block)
        out.flush()
        del out

    return FileRows.open(write_once(cache_path(warehouse, file, tag), write))


class ContentRows(Mapping[str, tuple[int, ...]]):
    """Every row holding a content, by ``content_sha256`` (rows in partition order), kept as
    three integer arrays (a group per row, the rows sorted by group, each group's start) instead
    of a dictionary of tuples: about 16 bytes a row."""

    def __init__(self, hashes: StringColumn) -> None:
        encoded = hashes.arrow().dictionary_encode().combine_chunks()
        self._hashes = hashes
        self._groups = encoded.dictionary
        self.group_of_row = np.asarray(encoded.indices.to_numpy(), np.int32)
        self._sorted = np.argsort(self.group_of_row, kind="stable").astype(np.int32)
        self._starts = np.searchsorted(self.group_of_row[self._sorted],
                                       np.arange(len(self._groups) + 1)).astype(np.int64)

    @classmethod
    def of(cls, hashes: Sequence[str]) -> ContentRows:
        column = hashes if isinstance(hashes, StringColumn) else StringColumn(pa.array(hashes, pa.string()))
        return cls(column)

    def rows_of_row(self, row: int) -> tuple[int, ...]:
        """Every row holding the content of ``row`` (itself included), in partition order."""
        group = self.group_of_row[row]
        return tuple(self._sorted[self._starts[group]:self._starts[group + 1]].tolist())

    def shared(self, groups: np.ndarray) -> np.ndarray:
        """Per group number, whether more than one row holds its content."""
        return self._starts[groups + 1] - self._starts[groups] > 1

    def __getitem__(self, content_hash: str) -> tuple[int, ...]:
        found = self._groups.index(content_hash).as_py()
        if found < 0:
            raise KeyError(content_hash)
        return tuple(self._sorted[self._starts[found]:self._starts[found + 1]].tolist())

    def __iter__(self) -> Iterator[str]:
        return iter(self._groups.to_pylist())

    def __len__(self) -> int:
        return len(self._groups)


def _dictionary_codes(column: pa.Array, lookup: Callable[[list], np.ndarray]) -> np.ndarray:
    """Per row of a dictionary-encoded (or plain) string column, ``lookup`` of its value: each
    distinct value is looked up once."""
    if pa.types.is_dictionary(column.type):
        return lookup(column.dictionary.to_pylist())[np.asarray(column.indices.to_numpy(), np.int64)]
    return lookup(column.to_pylist())


def mapped_bm25(warehouse: Warehouse, files: Mapping[str, str], chunk_ids: StringColumn,
                chunker: str) -> dict[Analyzer, Bm25Scorer]:
    """One memory-mapped scorer per analyzer the generation's BM25 tables hold.

    The postings file is streamed once into three ``.npy`` arrays per analyzer (CSC: each term's
    column start, then the rows and the weights of its postings, rows ascending), placed by the
    terms' ``df`` (a term with more postings than its ``df`` is an error, as is a posting of a
    chunk or term the statistics do not name).

    Args:
        warehouse: Where the tables are.
        files: The generation's ``bm25_terms``, ``bm25_chunks``, ``bm25_postings`` and
            ``bm25_params`` files, by table name.
        chunk_ids: The partition's chunk ids in row order (the scorers' rows).
        chunker: The partition's chunker (named in errors).

    Returns:
        A scorer per analyzer with statistics (an analyzer without is left out).

    Raises:
        IndexNotBuiltError: When the statistics are not those of these chunks.
    """
    params = {row["analyzer"]: row for row in warehouse.read_file(files[BM25_PARAMS]).to_pylist()}
    terms = warehouse.read_file(files[BM25_TERMS])
    stats = mapped_table(warehouse, files[BM25_CHUNKS], ["analyzer", "chunk_id", "length"])
    present = [a for a in Analyzer if a.value in params]
    # The weights depend on all four files (idf, lengths, k1 and b, the postings): the copy is
    # named after every one of them.
    made_from = hashlib.blake2b("\n".join(files[name] for name in BM25_TABLES).encode(),
                                digest_size=6).hexdigest()
    per: dict[Analyzer, dict] = {}
    for analyzer in present:
        own = terms.filter(pc.equal(terms.column("analyzer"), analyzer.value))
        mine = stats.filter(pc.equal(stats.column("analyzer"), analyzer.value))
        if not mine.column("chunk_id").equals(chunk_ids.arrow()):
            raise IndexNotBuiltError(f"BM25 statistics of {chunker} are out of date with its chunks: "
                                     "re-run `rag-pipeline index`")
        df = own.column("df").to_numpy().astype(np.int64)
        indptr = np.concatenate([[0], np.cumsum(df)]).astype(np.int64)
        per[analyzer] = {
            "terms": own.column("term").to_pylist(), "idf": own.column("idf").to_numpy(),
            "indptr": indptr, "lengths": mine.column("length").to_numpy().astype(np.float64),
            "paths": {name: cache_path(warehouse, files[BM25_POSTINGS],
                                       f"{made_from}.{analyzer.value}.{name}.npy")
                      for name in ("indptr", "indices", "data")}}
    paths = [p for a in per.values() for p in a["paths"].values()]
    if paths and not all(_whole_npy(p) for p in paths) and not _writable(paths[0].parent):
        for a in per.values():
            a["paths"] = {name: _elsewhere(path) for name, path in a["paths"].items()}
    if not all(_whole_npy(p) for a in per.values() for p in a["paths"].values()):
        _write_postings(warehouse, files[BM25_POSTINGS], chunk_ids, per, params)
    scorers = {}
    for analyzer, a in per.items():
        arrays = {name: np.load(path, mmap_mode="r") for name, path in a["paths"].items()}
        scorers[analyzer] = Bm25Scorer(chunk_ids, a["terms"], a["idf"], arrays["indptr"],
                                       arrays["indices"], arrays["data"], analyzer,
                                       params[analyzer.value]["k1"], params[analyzer.value]["b"])
    return scorers


def _whole_npy(path: Path) -> bool:
    """Whether ``path`` is an ``.npy`` file as long as its header says (a truncated copy is
    made again rather than mapped past its end)."""
    try:
        np.load(path, mmap_mode="r")
    except (OSError, ValueError):
        return False
    return True


def _write_postings(warehouse: Warehouse, file: str, chunk_ids: StringColumn,
                    per: dict[Analyzer, dict], params: Mapping[str, Mapping]) -> None:
    row_of = {c: i for i, c in enumerate(chunk_ids)}
    analyzer_code = {a.value: i for i, a in enumerate(Analyzer)}
    outputs = {}
    for analyzer, a in per.items():
        total = int(a["indptr"][-1])
        tmp = {name: path.with_name(f".{path.name}.{os.getpid()}.tmp") for name, path in a["paths"].items()}
        tmp["indptr"].parent.mkdir(parents=True, exist_ok=True)
        with open(tmp["indptr"], "wb") as sink:
            np.save(sink, a["indptr"])
        outputs[analyzer] = {
            "tmp": tmp, "fill": a["indptr"][:-1].copy(),
            "column_of": {t: i for i, t in enumerate(a["terms"])},
            "indices": np.lib.format.open_memmap(tmp["indices"], "w+", np.int32, (total,)),
            "data": np.lib.format.open_memmap(tmp["data"], "w+", np.float64, (total,))}

    def rows(values: list) -> np.ndarray:
        return np.array([row_of.get(v, -1) for v in values], np.int64)

    try:
        for batch in parquet_batches(warehouse, file, ["analyzer", "chunk_id", "term", "tf"],
                                     dictionary=["analyzer", "chunk_id", "term"]):
            analyzers = _dictionary_codes(batch.column(0), lambda vs: np.array(
                [analyzer_code.get(v, -1) for v in vs], np.int64))
            chunk_rows = _dictionary_codes(batch.column(1), rows)
            if (chunk_rows < 0).any():
                raise IndexNotBuiltError(f"{int((chunk_rows < 0).sum())} BM25 postings name a chunk "
                                         "missing from the statistics: re-run `rag-pipeline index`")
            tf_all = batch.column(3).to_numpy()
            for code, analyzer in enumerate(Analyzer):
                if analyzer not in outputs:
                    continue
                out, a = outputs[analyzer], per[analyzer]
                take = np.flatnonzero(analyzers == code)
                if not len(take):
                    continue
                cols = _dictionary_codes(batch.column(2).take(pa.array(take)), lambda vs, o=out: np.array(
                    [o["column_of"].get(v, -1) for v in vs], np.int64))
                if (cols < 0).any():
                    raise IndexNotBuiltError(f"{int((cols < 0).sum())} BM25 postings name a term missing "
                                             "from the statistics: re-run `rag-pipeline index`")
                chunk, tf = chunk_rows[take], tf_all[take]
                weights = posting_weights(a["idf"], a["lengths"], chunk, cols, tf,
                                          params[analyzer.value]["k1"], params[analyzer.value]["b"])
                order = np.argsort(cols, kind="stable")
                cols, chunk, weights = cols[order], chunk[order], weights[order]
                first = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
                counts = np.diff(np.r_[first, len(cols)])
                starts = out["fill"][cols[first]]
                if (starts + counts > a["indptr"][cols[first] + 1]).any():
                    raise IndexNotBuiltError("BM25 postings outnumber their terms' df: re-run "
                                             "`rag-pipeline index`")
                rank = np.arange(len(cols)) - np.repeat(first, counts)
                places = np.repeat(starts, counts) + rank
                out["indices"][places] = chunk
                out["data"][places] = weights
                out["fill"][cols[first]] += counts
        for analyzer, out in outputs.items():
            if not np.array_equal(out["fill"], per[analyzer]["indptr"][1:]):
                raise IndexNotBuiltError(f"BM25 postings of {analyzer.value} fall short of their terms' "
                                         "df: re-run `rag-pipeline index`")
            out["indices"].flush()
            out["data"].flush()
            del out["indices"], out["data"]
            for name, path in per[analyzer]["paths"].items():
                out["tmp"][name].replace(path)
    finally:
        for out in outputs.values():
            for path in out["tmp"].values():
                path.unlink(missing_ok=True)
