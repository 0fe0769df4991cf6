"""Vectors a model has already computed, by text sha256, wherever they were stored.

Three sources, all of one model only (the folder and the stamps name it): the latest embeddings
partition of every chunker (identical texts across chunkers are embedded once); checkpoint
shards that a run writes while it embeds (``<root>/_vector_cache/model=<key>/shard-*.parquet``),
so a run killed part-way leaves its finished work for the next run (a run that has written its
partition deletes the shards it no longer needs); and, for texts neither holds, the embeddings
files of the generations kept on disk (:meth:`VectorCache.kept`), so a document deleted and
restored by the next run is not embedded again.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rag_pipeline.core.embedding.models import ModelMismatchError, ModelSpec
from rag_pipeline.core.embedding.vectors import check_stamps, vector_matrix
from rag_pipeline.core.storage.table_names import EMBEDDINGS
from rag_pipeline.core.storage.warehouse import Warehouse

CACHE = "_vector_cache"


class VectorCache:
    """The known vectors of ``spec`` in ``warehouse``."""

    def __init__(self, warehouse: Warehouse, spec: ModelSpec) -> None:
        self.warehouse = warehouse
        self.spec = spec
        self.folder = f"{CACHE}/model={spec.key}"

    def shard_files(self) -> list[str]:
        return sorted(self.warehouse.relative(info.path)
                      for info in self.warehouse.list_files(self.folder)
                      if info.base_name.startswith("shard-") and info.base_name.endswith(".parquet"))

    def known(self, skip_chunker: str | None = None) -> dict[str, np.ndarray]:
        """Every stored vector of this model by text sha256 (the chunker being built is left
        out: its own partition is read separately)."""
        found: dict[str, np.ndarray] = {}
        for version in self.warehouse.versions(EMBEDDINGS):
            if version.partition.get("model") != self.spec.key or \
                    version.partition.get("chunker") == skip_chunker:
                continue
            table = self.warehouse.read_file(version.file)
            check_stamps(table, self.spec, f"embeddings {version.partition}")
            found.update(zip(table.column("text_sha256").to_pylist(), vector_matrix(table),
                             strict=True))
        for file in self.shard_files():
            table = self.warehouse.read_file(file)
            check_stamps(table, self.spec, f"checkpoint {file}")
            found.update(zip(table.column("text_sha256").to_pylist(), vector_matrix(table),
                             strict=True))
        return found

    def kept(self, files: Iterable[str], wanted: set[str]) -> dict[str, np.ndarray]:
        """The vectors of the ``wanted`` texts in embeddings ``files`` (a kept generation's,
        newest first) that are no partition's latest table (:meth:`known` read those). A
        file's vectors are read only when its digests hold a wanted text; a file collected
        since, damaged, or holding another model's vectors is passed over (its texts are
        embedded again: a run never fails for a cache)."""
        found: dict[str, np.ndarray] = {}
        latest = {version.file for version in self.warehouse.versions(EMBEDDINGS)}
        for file in files:
            if file in latest:
                continue
            try:
                digests = self.warehouse.read_file(file, columns=["text_sha256"]).column("text_sha256")
                if not wanted.intersection(digests.to_pylist()):
                    continue
                table = self.warehouse.read_file(file)
            except (OSError, pa.ArrowException, ValueError):
                continue
            try:
                check_stamps(table, self.spec, f"embeddings {file}")
            except ModelMismatchError:
                continue
            table = table.filter(pc.is_in(table.column("text_sha256"),
                                          value_set=pa.array(sorted(wanted), pa.string())))
            found.update(zip(table.column("text_sha256").to_pylist(), vector_matrix(table),
                             strict=True))
            wanted = wanted - found.keys()
            if not wanted:
                break
        return found

    def checkpoint(self, shas: list[str], vectors: np.ndarray) -> str:
        """Stores freshly computed vectors as one immutable shard; returns its file."""
        n = len(shas)
        table = pa.table({
            "text_sha256": pa.array(shas, pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(np.asarray(vectors, np.float32).reshape(-1), pa.float32()),
                self.spec.dimension),
            "model_name": [self.spec.name] * n,
            "model_fingerprint": [self.spec.fingerprint] * n,
        })
        buffer = io.BytesIO()
        pq.write_table(table, buffer, compression="zstd")
        digest = hashlib.sha256(buffer.getvalue()).hexdigest()[:16]
        file = f"{self.folder}/shard-{digest}.parquet"
        self.warehouse.put_bytes(file, buffer.getvalue())
        return file

    def drop_covered(self, stored_shas: set[str]) -> int:
        """Deletes shards whose every text is in ``stored_shas``; returns how many."""
        dropped = 0
        for file in self.shard_files():
            shas = self.warehouse.read_file(file, columns=["text_sha256"]).column(
                "text_sha256").to_pylist()
            if set(shas) <= stored_shas:
                self.warehouse.delete(file)
                dropped += 1
        return dropped
