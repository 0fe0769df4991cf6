"""Builds a tiny real index straight from the core (no Dagster), for retrieval-level tests.

The same steps the assets take, in the same order: ``documents``, then ``chunks`` of one
chunker, its ``embeddings`` (real model or hashed stand-in), its BM25 tables, each written to
its partition of a :class:`Warehouse`, published as one generation; then the partition is loaded
as a :class:`PartitionIndex`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from rag_pipeline.core.chunking.strategies import ChunkingSettings, ChunkingStrategy
from rag_pipeline.core.embedding.models import TextEmbedder
from rag_pipeline.core.index import GENERATION_TABLES
from rag_pipeline.core.index.generations import Generation, publish
from rag_pipeline.core.index.partition_build import build_partition
from rag_pipeline.core.index.query_db import publish_query_db
from rag_pipeline.core.index.store import PartitionIndex, load_partition
from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.storage.table_names import CHUNKS, DOCUMENTS
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus

TIMEOUTS_PARAGRAPH = ("Every network call gives up after seventeen seconds unless the timeout key says "
                      "otherwise.")

DUPLICATED_DOCS = {
    **TINY_DOCS,
    # Planted flaw: the Timeouts paragraph of guide/config.md again, word for word, under
    # another heading. Same content_sha256, other embedded text (other header): duplicate
    # collapse must keep one hit for both rows and name both in `locations`.
    "guide/faq.md": f"# Frobnicator FAQ\n\n## Why did my download stop?\n\n{TIMEOUTS_PARAGRAPH}\n",
}
"""The conftest's tiny corpus plus one document repeating a paragraph. With the ``header``
chunker at the default 512-character target it makes six chunks, in this row order (the
offsets of install.md count its 29 characters of front matter, in no chunk):

0 ``guide/config.md:27-98``   [Configuring Frobnicator] The configuration file lives ...
1 ``guide/config.md:113-203`` [Configuring Frobnicator > Timeouts] Every network call ...
2 ``guide/faq.md:49-139``     [Frobnicator FAQ > Why did my download stop?] Every network call ...
3 ``guide/install.md:55-127``  [Installing Frobnicator] Frobnicator needs a POSIX shell ...
4 ``guide/install.md:143-271`` [Installing Frobnicator > Upgrading] Run the upgrade command ...
5 ``notes.txt:0-58``          [notes] Release notes. Version 2 removed the legacy XML exporter.
"""


@dataclass(frozen=True)
class BuiltIndex:
    """A loaded partition with the documents it was built from."""

    data_dir: Path
    corpus_dir: Path
    index: PartitionIndex
    canonical: dict[str, str]
    """``document_id -> canonical_text`` of every ok document."""


def build_index(root: Path, embedder: TextEmbedder,
                docs: Mapping[str, str] = DUPLICATED_DOCS,
                strategy: ChunkingStrategy = ChunkingStrategy.HEADER,
                settings: ChunkingSettings | None = None) -> BuiltIndex:
    """Writes ``docs`` under ``root/corpus``, indexes them into ``root/data`` with ``embedder``
    (the real model, or the hashed stand-in where the model is not the point) and loads the
    ``strategy x embedder.spec`` partition."""
    corpus_dir = write_corpus(root / "corpus", dict(docs))
    data_dir = root / "data"
    records = extract_corpus(corpus_dir).records
    build_partition(Warehouse(data_dir), records, strategy, embedder, settings)
    index = load_partition(data_dir, strategy.value, embedder.spec.key)
    return BuiltIndex(data_dir, corpus_dir, index,
                      {r.document_id: r.canonical_text for r in records if r.ok})


def plant_published(built: BuiltIndex, tables: Mapping[str, pa.Table]) -> Generation:
    """Publishes ``tables`` (flawed copies) in place of the served generation's, as a buggy
    writer would have, each claiming the inputs of the table it replaces; refreshes the DuckDB
    file. Guards downstream of publishing must still catch the flaw. An optional table built
    from a replaced one (the ANN index of replaced vectors) is left out."""
    warehouse = Warehouse(built.data_dir)
    chunker, model = built.index.chunker, built.index.model_key
    versions = {}
    for declared in GENERATION_TABLES:
        if not declared.required(None) and not declared.optional:
            continue  # built without [access]: no access table
        table = declared.name
        partition = declared.scope.partition(chunker, model)
        version = warehouse.require_version(table, partition)
        if table in tables:
            version = warehouse.write(table, tables[table], partition, inputs=version.inputs)
        elif table == CHUNKS and DOCUMENTS in tables:
            version = warehouse.write(table, warehouse.read_file(version.file), partition,
                                      inputs={DOCUMENTS: versions[DOCUMENTS].file})
        elif declared.optional and version.inputs.get(declared.built_from) != \
                versions[declared.built_from].file:
            continue  # the ANN index of replaced vectors: the planted generation has none
        versions[table] = version
    generation, _ = publish(warehouse, chunker, model, versions)
    publish_query_db(warehouse)
    return generation


TOPICS = ["timeouts", "retries", "proxies", "certificates", "logging", "caching", "upgrades",
          "plugins", "exporters", "schedules"]


def topic_docs() -> dict[str, str]:
    """40 documents of 6 sections each, every section naming its topic and document."""
    docs = {}
    for d in range(40):
        sections = "".join(
            f"## {TOPICS[(d + s) % len(TOPICS)].title()} {s}\n\nThe {TOPICS[(d + s) % len(TOPICS)]} "
            f"setting of module {d} section {s} controls how the {TOPICS[s % len(TOPICS)]} behave "
            f"for network call number {d * 7 + s}.\n\n" for s in range(6))
        docs[f"guide/doc{d:02d}.md"] = f"# Guide {d}\n\n{sections}"
    return docs
