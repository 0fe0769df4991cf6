"""The build path's rules at their one home (core/index/build.py): the vector-reuse rule, the
blocking checks of chunks and embeddings, publication with the DuckDB snapshot, and the
single-process build that refuses to publish what a blocking check failed."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from rag_pipeline.core.chunking.strategies import ChunkingSettings, ChunkingStrategy
from rag_pipeline.core.embedding.vectors import vector_matrix
from rag_pipeline.core.index.build import (
    BlockingCheckError,
    build_chunks,
    build_embeddings,
    chunk_checks,
    embedding_checks,
    publish_partition,
    read_documents,
    reusable_vectors,
    write_documents,
)
from rag_pipeline.core.index.generations import current_generation
from rag_pipeline.core.index.partition_build import build_partition
from rag_pipeline.core.ingest import ExtractionSettings, extract_corpus
from rag_pipeline.core.ingest.reconcile import Change, CorpusShrankError
from rag_pipeline.core.ingest.sources.local import LocalSource
from rag_pipeline.core.storage.table_names import CHUNKS, DOCUMENTS, EMBEDDINGS
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus
from rag_pipeline_tests.fake_embedder import HashedEmbedder

SETTINGS = ChunkingSettings(target_chars=512)


def _stretch_first_vector(table: pa.Table) -> pa.Table:
    # Planted flaw (trips vectors_unit_length): the first vector doubled in length.
    vectors = vector_matrix(table).copy()
    vectors[0] *= 2.0
    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()),
                                               vectors.shape[1])
    return table.set_column(table.schema.get_field_index("vector"), "vector", column)


def _restamp_first_row(table: pa.Table) -> pa.Table:
    # Planted flaw (trips one_model_per_partition): one row stamped with other weights.
    fingerprints = table.column("model_fingerprint").to_pylist()
    fingerprints[0] = "00000000"
    return table.set_column(table.schema.get_field_index("model_fingerprint"),
                            "model_fingerprint", pa.array(fingerprints, pa.string()))


class DriftedEmbedder(HashedEmbedder):
    """Planted flaw (trips vectors_match_model): the same key, its vectors moved one place."""

    def embed(self, texts, **kwargs) -> np.ndarray:
        return np.roll(super().embed(texts, **kwargs), 1, axis=1)


class LongVectors(HashedEmbedder):
    """Planted flaw (trips vectors_unit_length on every row): vectors of length 3."""

    def embed(self, texts, **kwargs) -> np.ndarray:
        return super().embed(texts, **kwargs) * 3.0


@pytest.fixture
def built(tmp_path: Path, hashed_embedder: HashedEmbedder) -> Warehouse:
    """The tiny corpus's header partition, built and published once."""
    records = extract_corpus(write_corpus(tmp_path / "corpus", TINY_DOCS)).records
    warehouse = Warehouse(tmp_path / "data")
    build_partition(warehouse, records, ChunkingStrategy.HEADER, hashed_embedder, SETTINGS)
    return warehouse


def _partition(embedder: HashedEmbedder) -> dict[str, str]:
    return {"chunker": "header", "model": embedder.spec.key}


def _chunks(warehouse: Warehouse) -> pa.Table:
    return warehouse.read(CHUNKS, {"chunker": "header"},
                          columns=["chunk_id", "text", "text_sha256", "wordpieces"])


def test_each_embedding_flaw_trips_its_own_check(built: Warehouse, hashed_embedder: HashedEmbedder):
    stored = built.read(EMBEDDINGS, _partition(hashed_embedder))
    chunks = _chunks(built)
    assert embedding_checks(stored, chunks, hashed_embedder).failed == []
    assert embedding_checks(_stretch_first_vector(stored), chunks,
                            hashed_embedder).failed == ["vectors_unit_length"]
    assert embedding_checks(_restamp_first_row(stored), chunks,
                            hashed_embedder).failed == ["one_model_per_partition"]
    assert embedding_checks(stored, chunks, DriftedEmbedder(hashed_embedder.spec)).failed == [
        "vectors_match_model"]


def test_reuse_takes_the_latest_vectors_only_while_they_pass(built: Warehouse,
                                                              hashed_embedder: HashedEmbedder):
    partition, chunks = _partition(hashed_embedder), _chunks(built)
    served = built.read_file(current_generation(built, "header", hashed_embedder.spec.key)
                             .files[EMBEDDINGS])
    # The latest table is the served one here, and passes: it is reused.
    assert reusable_vectors(built, partition, chunks, hashed_embedder).equals(served)
    # A newer table with a stretched vector (a run that wrote it and failed its check) is never
    # reused: the served generation's vectors are.
    built.write(EMBEDDINGS, _stretch_first_vector(served), partition)
    assert reusable_vectors(built, partition, chunks, hashed_embedder).equals(served)
    # A partition nothing was written for has nothing to reuse.
    other = {"chunker": "boundaries", "model": hashed_embedder.spec.key}
    assert reusable_vectors(built, other, chunks, hashed_embedder) is None


def test_each_chunk_flaw_trips_its_own_check(built: Warehouse):
    documents = built.read(DOCUMENTS)
    chunks = built.read(CHUNKS, {"chunker": "header"})
    assert chunk_checks(documents, chunks).failed == []
    # Planted flaw (trips chunk_ids_unique): the first row written twice.
    assert chunk_checks(documents, pa.concat_tables([chunks, chunks.slice(0, 1)])).failed == [
        "chunk_ids_unique"]
    # Planted flaw (trips offsets_slice_exactly and leaves a character uncovered): the first
    # chunk's offsets moved one character right.
    shift = pa.array([1] + [0] * (chunks.num_rows - 1), pa.int64())
    moved = chunks.set_column(chunks.schema.get_field_index("from"), "from",
                              pc.add(chunks.column("from"), shift))
    moved = moved.set_column(moved.schema.get_field_index("to"), "to",
                             pc.add(moved.column("to"), shift))
    assert chunk_checks(documents, moved).failed == ["offsets_slice_exactly",
                                                     "covers_every_character"]


def test_a_failed_blocking_check_publishes_nothing(tmp_path: Path):
    records = extract_corpus(write_corpus(tmp_path / "corpus", TINY_DOCS)).records
    warehouse = Warehouse(tmp_path / "data")
    embedder = LongVectors()
    with pytest.raises(BlockingCheckError, match=f"header x {embedder.spec.key}: embeddings "
                                                 "failed vectors_unit_length"):
        build_partition(warehouse, records, ChunkingStrategy.HEADER, embedder, SETTINGS)
    assert current_generation(warehouse, "header", embedder.spec.key) is None


def test_publication_refreshes_the_snapshot_and_a_second_one_is_unchanged(
        built: Warehouse, hashed_embedder: HashedEmbedder):
    key = hashed_embedder.spec.key
    with duckdb.connect(str(built.db_path), read_only=True) as con:
        assert con.execute("select count(*) from chunks").fetchone() == (
            built.read(CHUNKS, {"chunker": "header"}).num_rows,)
        assert con.execute("select count(*) from document_pages").fetchone() == (0,)
    again = publish_partition(built, "header", key)
    assert (again.is_new, again.generation.id) == (
        False, current_generation(built, "header", key).id)


def test_a_pointer_that_cannot_be_written_leaves_the_snapshot_showing_what_is_served(
        built: Warehouse, hashed_embedder: HashedEmbedder, monkeypatch: pytest.MonkeyPatch):
    """Found by an attack: with the disk full at the pointer's write, rag.duckdb (and `status`,
    which reads it) showed the new generation while every reader served the old one, and its
    manifest stayed."""
    import errno

    from rag_pipeline.core.index.generations import CURRENT, GENERATIONS

    key = hashed_embedder.spec.key
    served = current_generation(built, "header", key)
    corpus = write_corpus(built.data_dir.parent / "corpus",
                          {**TINY_DOCS, "guide/new.md": "# New\n\nA page added since.\n"})
    put_json = Warehouse.put_json

    def disk_full_at_the_pointer(warehouse: Warehouse, relative: str, data) -> None:
        if relative.endswith(CURRENT):
            raise OSError(errno.ENOSPC, "No space left on device")
        put_json(warehouse, relative, data)

    monkeypatch.setattr(Warehouse, "put_json", disk_full_at_the_pointer)
    with pytest.raises(OSError, match="No space left on device"):
        build_partition(built, extract_corpus(corpus).records, ChunkingStrategy.HEADER,
                        hashed_embedder, SETTINGS)
    assert current_generation(built, "header", key) == served
    with duckdb.connect(str(built.db_path), read_only=True) as con:
        assert con.execute("select generation from generations").fetchall() == [(served.id,)]
        assert con.execute("select count(*) from chunks").fetchone() == (served.rows[CHUNKS],)
    manifests = sorted(p.name for p in (Path(built.root) / GENERATIONS).rglob("*.json"))
    assert manifests == sorted([CURRENT, f"{served.id}.json"])


def test_the_stages_rebuilt_from_unchanged_inputs_embed_nothing(built: Warehouse,
                                                                hashed_embedder: HashedEmbedder):
    records = extract_corpus(write_corpus(built.data_dir.parent / "corpus", TINY_DOCS)).records
    assert not write_documents(built, records).changed
    chunks = build_chunks(built, ChunkingStrategy.HEADER, hashed_embedder.spec, SETTINGS)
    assert (chunks.added, chunks.removed, chunks.checks.failed, chunks.counted) == (0, 0, [], 0)
    embeddings = build_embeddings(built, "header", hashed_embedder)
    assert (embeddings.stats.embedded, embeddings.stats.reused, embeddings.checks.failed) == (
        0, embeddings.stats.rows, [])


def test_a_re_cut_counts_the_word_pieces_of_new_texts_alone_and_writes_what_a_fresh_count_writes(
        built: Warehouse, hashed_embedder: HashedEmbedder):
    # Found by a new team: after one edit, counting the word-pieces of all 13,384 chunks again
    # was 5.5 s of the 7.4 s the chunks took.
    from rag_pipeline.core.embedding.wordpieces import wordpiece_counter
    from rag_pipeline.core.index.builders import chunks_table, document_records

    docs = dict(TINY_DOCS)
    name = sorted(docs)[0]
    docs[name] = docs[name] + "\n\nA paragraph written since, about gauges read at noon.\n"
    records = extract_corpus(write_corpus(built.data_dir.parent / "edited", docs)).records
    assert write_documents(built, records).changed
    chunks = build_chunks(built, ChunkingStrategy.HEADER, hashed_embedder.spec, SETTINGS)
    fresh, _ = chunks_table(document_records(built.read(DOCUMENTS)), ChunkingStrategy.HEADER,
                            wordpiece_counter(hashed_embedder.spec), SETTINGS)
    assert chunks.table.equals(fresh)
    assert chunks.added == 1
    assert chunks.counted == 1  # the new chunk's text; its header was counted before


def _folder_built(tmp_path: Path, embedder: HashedEmbedder):
    """The tiny corpus's folder, its data folder, and a function that builds and publishes its
    header partition as the folder is now (returning the embedding run's figures)."""
    corpus = write_corpus(tmp_path / "corpus", TINY_DOCS)
    warehouse = Warehouse(tmp_path / "data")

    def build():
        return build_partition(warehouse, extract_corpus(corpus).records, ChunkingStrategy.HEADER,
                               embedder, SETTINGS).embedding

    return corpus, warehouse, build


def test_a_document_deleted_and_restored_by_the_next_run_is_not_embedded_again(
        tmp_path: Path, hashed_embedder: HashedEmbedder):
    # Found by a team whose folder changes daily: a file moved out of the folder and back (a
    # branch switched and back) was embedded again, though the generation before held its vectors.
    corpus, warehouse, build = _folder_built(tmp_path, hashed_embedder)

    def vectors() -> dict[str, list[float]]:
        table = warehouse.read(EMBEDDINGS, _partition(hashed_embedder), columns=["chunk_id", "vector"])
        return dict(zip(table.column("chunk_id").to_pylist(), table.column("vector").to_pylist(),
                        strict=True))

    first = build()
    before = vectors()
    config = corpus / "guide" / "config.md"
    kept = config.read_bytes()
    config.unlink()
    second = build()
    config_chunks = sum(1 for chunk_id in before if chunk_id.startswith("guide/config.md:"))
    assert config_chunks == 2
    assert (first.embedded, second.embedded, second.removed) == (first.rows, 0, 2)
    config.write_bytes(kept)
    third = build()
    assert (third.embedded, third.reused, third.shared) == (0, first.rows - 2, 2)
    assert vectors() == before


def test_a_damaged_file_of_a_kept_generation_is_passed_over_and_its_texts_embedded_again(
        tmp_path: Path, hashed_embedder: HashedEmbedder):
    # Found by an attack: a kept generation's embeddings file cut short failed every later run
    # (ArrowInvalid), and no run could publish the generation that would let it go.
    from rag_pipeline.core.index.generations import kept_table_files

    corpus, warehouse, build = _folder_built(tmp_path, hashed_embedder)
    build()
    config = corpus / "guide" / "config.md"
    kept = config.read_bytes()
    config.unlink()
    build()
    newest, older = kept_table_files(warehouse, EMBEDDINGS, hashed_embedder.spec.key)
    assert newest == warehouse.version(EMBEDDINGS, _partition(hashed_embedder)).file
    path = warehouse.data_dir / "warehouse" / older
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    config.write_bytes(kept)
    assert build().embedded == 2


def test_a_reading_reuses_what_is_unchanged_and_writes_nothing_when_the_corpus_shrank(
        tmp_path: Path):
    corpus = write_corpus(tmp_path / "corpus", TINY_DOCS)
    warehouse = Warehouse(tmp_path / "data")
    first = read_documents(warehouse, LocalSource(corpus), ExtractionSettings())
    assert (first.result.extracted, first.written.changed) == (3, True)
    assert first.result.report.counts()["added"] == 3
    (corpus / "notes.txt").write_text("Release notes, edited.\n", encoding="utf-8")
    second = read_documents(warehouse, LocalSource(corpus), ExtractionSettings())
    assert (second.result.extracted, second.result.reused) == (1, 2)
    assert second.result.report.ids(Change.CHANGED) == ["notes.txt"]
    # Two of three documents gone: more than half, refused, the documents as they were.
    (corpus / "notes.txt").unlink()
    (corpus / "guide" / "config.md").unlink()
    with pytest.raises(CorpusShrankError, match="shrank from 3 to 1 readable documents"):
        read_documents(warehouse, LocalSource(corpus), ExtractionSettings())
    assert warehouse.version(DOCUMENTS) == second.written.version
    third = read_documents(warehouse, LocalSource(corpus), ExtractionSettings(), allow_shrink=True)
    assert third.result.report.ids(Change.DELETED) == ["guide/config.md", "notes.txt"]
