"""Published index generations: what readers of a chunker x model partition see.

A generation names the exact files a query needs, one per table declared in
:data:`rag_pipeline.core.index.GENERATION_TABLES` (documents, chunks, the four BM25 tables and
the embeddings), all built from the same corpus state. It is published by one atomic step at
the end of a build, like a database commit point: the manifest ``<id>.json`` is written first,
then ``CURRENT.json`` is replaced by a copy of it (locally temp file + rename, on an object store
one PUT). A reader reads ``CURRENT.json`` once and holds that generation for its whole life;
files are immutable, and garbage collection keeps every file of the current and the previous
generation of each partition, so a reader that has just read ``CURRENT.json`` can still load.

Layout: ``<root>/_generations/chunker=<c>/model=<m>/{<id>.json, CURRENT.json}``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import pyarrow.fs as pafs

from rag_pipeline.core.index import (
    GENERATION_TABLES,
    BuiltTable,
    check_consistent,
)
from rag_pipeline.core.index.ann_index import CACHE_DIR, INDEX_SUFFIXES, ann_graph_files
from rag_pipeline.core.index.mapped import MAP_CACHE_DIR, collect_copies
from rag_pipeline.core.storage.generation_pointer import CURRENT, GENERATIONS, generation_dir
from rag_pipeline.core.storage.warehouse import POINTER_FILE, Warehouse, utc_now

__all__ = ["CURRENT", "GARBAGE_GRACE_SECONDS", "GENERATIONS", "GarbageStats", "Generation",
           "collect_garbage", "current_generation", "current_generations",
           "generation_age_seconds", "generation_dir", "kept_table_files", "past_grace", "publish"]

GARBAGE_GRACE_SECONDS = 600.0
"""How old a file no pointer names must be before it is deleted: a reader (a backup copying
the pointers first, a publication) that read a pointer just before it moved still finds the
files it names."""


@dataclass(frozen=True)
class Generation:
    """One published, immutable state of a chunker x model partition."""

    id: str
    chunker: str
    model: str
    published_at: str
    files: dict[str, str]
    rows: dict[str, int]

    def __hash__(self) -> int:
        return hash((self.id, self.chunker, self.model))

    @property
    def content_id(self) -> str:
        return self.id.rsplit("-", 1)[-1]

    def missing_tables(self) -> list[str]:
        """Declared tables this generation has no file for (published before they joined)."""
        return [t.name for t in GENERATION_TABLES if t.name not in self.files and t.required(None)]

    def age_seconds(self, now: float | None = None) -> float:
        return generation_age_seconds(self.published_at, now)

    @classmethod
    def from_json(cls, data: Mapping) -> Generation:
        return cls(id=data["id"], chunker=data["chunker"], model=data["model"],
                   published_at=data["published_at"], files=dict(data["files"]),
                   rows={k: int(v) for k, v in data["rows"].items()})


def generation_age_seconds(published_at: str, now: float | None = None) -> float:
    """Seconds since a ``utc_now()`` stamp."""
    published = datetime.strptime(published_at, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return (time.time() if now is None else now) - published.timestamp()


def current_generation(warehouse: Warehouse, chunker: str, model: str) -> Generation | None:
    return warehouse.parse_json(f"{generation_dir(chunker, model)}/{CURRENT}", Generation.from_json)


def current_generations(warehouse: Warehouse) -> list[Generation]:
    """The served generation of every published partition, sorted by chunker and model."""
    found = []
    for info in warehouse.list_files(GENERATIONS):
        if info.base_name == CURRENT:
            generation = warehouse.parse_json(warehouse.relative(info.path), Generation.from_json)
            if generation is not None:
                found.append(generation)
    return sorted(found, key=lambda g: (g.chunker, g.model))


def kept_table_files(warehouse: Warehouse, table: str, model: str) -> list[str]:
    """The files of ``table`` that ``model``'s generation manifests still on disk name, every
    chunker's (the served generation and the one before it: :func:`collect_garbage` keeps
    them), newest first."""
    manifests = [manifest for info in warehouse.list_files(GENERATIONS)
                 if info.base_name.endswith(".json") and info.base_name != CURRENT
                 and warehouse.relative(info.path).rsplit("/", 2)[1] == f"model={model}"
                 and (manifest := warehouse.get_json(warehouse.relative(info.path))) is not None]
    # By publication time to the microsecond: two generations of one second sort by their
    # content ids in their names.
    manifests.sort(key=lambda manifest: str(manifest.get("published_at", "")), reverse=True)
    files: list[str] = []
    for manifest in manifests:
        named = manifest.get("files", {}).get(table)
        if named and named not in files:
            files.append(named)
    return files


def publish(warehouse: Warehouse, chunker: str, model: str,
            tables: Mapping[str, BuiltTable],
            before_pointer: Callable[[Generation], None] | None = None,
            rules: str | None = None,
            undo_before_pointer: Callable[[], None] | None = None) -> tuple[Generation, bool]:
    """Publishes a generation of these table files (one per declared table, each built from
    the others offered: :func:`rag_pipeline.core.index.check_consistent`), unless the current
    one already holds exactly these files. Returns the served generation and whether it is new.
    ``rules`` is the digest of the ``[access]`` rules in force (None: none declared), which the
    offered ``access`` table must label.

    The pointer (``CURRENT.json``) is written last: after the generation's manifest and after
    ``before_pointer`` (what must show the new generation first, such as ``rag.duckdb``). When
    any of the three fails (a full disk) the manifest is removed and the served generation is
    as it was; when the pointer is what failed, ``undo_before_pointer`` puts back what
    ``before_pointer`` did (should it fail too, the error says so in a note).
    """
    check_consistent(tables, rules)
    offered = [t.name for t in GENERATION_TABLES if t.name in tables]
    files = {name: tables[name].file for name in offered}
    rows = {name: tables[name].rows for name in offered}
    content = hashlib.sha256("\n".join(f"{t}={f}" for t, f in sorted(files.items())).encode())
    content_id = content.hexdigest()[:8]
    current = current_generation(warehouse, chunker, model)
    if current is not None and current.content_id == content_id:
        return current, False
    published_at = utc_now()
    stamp = published_at.replace("-", "").replace(":", "").split(".")[0] + "Z"
    generation = Generation(id=f"{stamp}-{content_id}", chunker=chunker, model=model,
                            published_at=published_at, files=files, rows=rows)
    folder = generation_dir(chunker, model)
    manifest = f"{folder}/{generation.id}.json"
    shown = False
    try:
        warehouse.put_json(manifest, asdict(generation))
        if before_pointer is not None:
            before_pointer(generation)
            shown = True
        warehouse.put_json(f"{folder}/{CURRENT}", asdict(generation))
    except BaseException as failure:
        warehouse.delete(manifest)
        if shown and undo_before_pointer is not None:
            try:
                undo_before_pointer()
            except Exception as undo_failure:  # noqa: BLE001 - the pointer's error is the one raised
                failure.add_note(f"what showed generation {generation.id} first could not be put "
                                 f"back: {type(undo_failure).__name__}: {undo_failure}")
        raise
    return generation, True


@dataclass(frozen=True)
class GarbageStats:
    files_deleted: int
    bytes_deleted: int
    manifests_deleted: int
    copies_deleted: int = 0
    """Local copies (``map_cache/``, ``ann_cache/``) of table files no longer named."""
    copy_bytes_deleted: int = 0


def past_grace(info: pafs.FileInfo, now: float,
               grace_seconds: float = GARBAGE_GRACE_SECONDS) -> bool:
    """Whether the file of ``info`` was last written ``grace_seconds`` or more before ``now`` (a
    file whose time the store does not give: never)."""
    written = info.mtime.timestamp() if info.mtime is not None else now
    return now - written >= grace_seconds


def collect_garbage(warehouse: Warehouse, *, keep: int = 2,
                    grace_seconds: float = GARBAGE_GRACE_SECONDS) -> GarbageStats:
    """Deletes table files (and ANN graph files) that no pointer and none of the last ``keep``
    published generations of any partition name (a graph is named by its ``ann_index`` file),
    and temporary files a killed writer left, once older than ``grace_seconds``
    (so a writer between its file and its pointer is never robbed); then the data folder's local
    copies of the files it deleted (:func:`rag_pipeline.core.index.mapped.collect_copies`).

    A generation is published when its pointer names it or one after it: a manifest newer than
    the pointer's is a writer's between its manifest and its pointer, kept within the grace, or
    one a killed writer left, deleted past it, and never one of the ``keep``: it would rob the
    generation served before the pointer's of its files while a reader may still hold it."""
    referenced: set[str] = set()
    manifests_deleted = 0
    by_partition: dict[str, list[tuple[str, pafs.FileInfo]]] = {}
    served: dict[str, str] = {}
    for info in warehouse.list_files(GENERATIONS):
        rel = warehouse.relative(info.path)
        if info.base_name.endswith(".json") and info.base_name != CURRENT:
            by_partition.setdefault(rel.rsplit("/", 1)[0], []).append((rel, info))
        elif info.base_name == CURRENT:
            data = warehouse.get_json(rel)
            if data is not None:
                referenced.update(data["files"].values())
                served[rel.rsplit("/", 1)[0]] = f"{data['id']}.json"
    now = time.time()
    for folder, manifests in by_partition.items():
        manifests.sort(key=lambda manifest: manifest[0])
        pointer = served.get(folder)
        published = [m for m in manifests if pointer is None or m[0].rsplit("/", 1)[1] <= pointer]
        unpublished = manifests[len(published):]
        kept = published[-keep:] + [m for m in unpublished if not past_grace(m[1], now, grace_seconds)]
        kept_names = {rel for rel, _ in kept}
        for rel in kept_names:
            data = warehouse.get_json(rel)
            if data is not None:
                referenced.update(data["files"].values())
        for rel, _ in manifests:
            if rel not in kept_names:
                warehouse.delete(rel)
                manifests_deleted += 1
    referenced.update(v.file for v in warehouse.versions())
    referenced.update(ann_graph_files(warehouse, referenced))
    deleted = deleted_bytes = 0
    for info in warehouse.list_files():
        rel = warehouse.relative(info.path)
        if rel.startswith(GENERATIONS) or info.base_name == POINTER_FILE:
            continue
        is_part = (info.base_name.startswith("part-")
                   and info.base_name.endswith((".parquet", *INDEX_SUFFIXES)))
        is_tmp = info.base_name.startswith(".") and info.base_name.endswith(".tmp")
        if not (is_part or is_tmp) or rel in referenced:
            continue
        if not past_grace(info, now, grace_seconds):
            continue
        warehouse.delete(rel)
        deleted += 1
        deleted_bytes += info.size or 0
    copies, copy_bytes = collect_copies(warehouse.data_dir, referenced, grace_seconds,
                                        (MAP_CACHE_DIR, CACHE_DIR))
    return GarbageStats(deleted, deleted_bytes, manifests_deleted, copies, copy_bytes)
