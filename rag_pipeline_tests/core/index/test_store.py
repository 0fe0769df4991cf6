"""The query-side loader refuses a partition it cannot trust; each refusal is shown on a
partition with a planted flaw (built with the hashed stand-in model: the flaws are in the
tables, not in the vectors' meaning)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from rag_pipeline.core.answer.ask import AskSettings, ask
from rag_pipeline.core.index.builders import bm25_stats_tables
from rag_pipeline.core.index.store import DocumentInfo, load_partition
from rag_pipeline.core.storage.warehouse import IndexNotBuiltError, Warehouse
from rag_pipeline_tests.core.index_builder import BuiltIndex, build_index, plant_published
from rag_pipeline_tests.fake_embedder import HashedEmbedder

HEADER = {"chunker": "header"}


@pytest.fixture
def built(tmp_path: Path, hashed_embedder: HashedEmbedder) -> BuiltIndex:
    return build_index(tmp_path, hashed_embedder)


def _embeddings_partition(built: BuiltIndex) -> dict[str, str]:
    return {**HEADER, "model": built.index.model_key}


def _restamp(built: BuiltIndex, rows: int) -> None:
    """Rewrites the embeddings partition with its first ``rows`` rows stamped ``00000000``."""
    warehouse = Warehouse(built.data_dir)
    table = warehouse.read("embeddings", _embeddings_partition(built))
    stamps = ["00000000"] * rows + table.column("model_fingerprint").to_pylist()[rows:]
    plant_published(built, {"embeddings": table.set_column(
        table.schema.get_field_index("model_fingerprint"), "model_fingerprint",
        pa.array(stamps, pa.string()))})


def test_the_clean_partition_loads(built: BuiltIndex):
    index = load_partition(built.data_dir, "header", built.index.model_key)
    assert (len(index), index.model_fingerprint) == (6, "0000feed")


def test_a_partition_mixing_two_models_is_refused(built: BuiltIndex):
    # Planted flaw (trips the mixed-stamps refusal): one row stamped with other weights.
    _restamp(built, rows=1)
    with pytest.raises(IndexNotBuiltError) as raised:
        load_partition(built.data_dir, "header", built.index.model_key)
    assert str(raised.value) == (
        f"partition header x {built.index.model_key} mixes models: "
        "[('hashed-wordpieces', '00000000'), ('hashed-wordpieces', '0000feed')]")


def test_a_partition_stamped_with_another_model_is_refused(built: BuiltIndex):
    # Planted flaw (trips the stamp-versus-partition-key refusal): every row stamped with other
    # weights than the partition key names.
    _restamp(built, rows=6)
    with pytest.raises(IndexNotBuiltError) as raised:
        load_partition(built.data_dir, "header", built.index.model_key)
    assert str(raised.value) == (
        f"partition {built.index.model_key} holds vectors stamped hashed-wordpieces@00000000")


def test_stale_bm25_tables_are_refused(built: BuiltIndex):
    # Planted flaw (trips the stale-BM25 refusal): the BM25 tables were built from the chunks
    # before the last one was added, so their chunk order is not the partition's.
    warehouse = Warehouse(built.data_dir)
    chunks = warehouse.read("chunks", HEADER)
    plant_published(built, bm25_stats_tables(chunks.slice(0, chunks.num_rows - 1)))
    with pytest.raises(IndexNotBuiltError, match=r"^BM25 statistics of header are out of date with "
                                                 r"its chunks: re-run `rag-pipeline index`$"):
        load_partition(built.data_dir, "header", built.index.model_key)


def test_chunks_without_a_vector_are_refused(built: BuiltIndex):
    # Planted flaw (trips the missing-vector refusal): the embeddings lost their last row.
    warehouse = Warehouse(built.data_dir)
    table = warehouse.read("embeddings", _embeddings_partition(built))
    plant_published(built, {"embeddings": table.slice(0, table.num_rows - 1)})
    with pytest.raises(IndexNotBuiltError, match=r"^1 chunks of header have no vector in "):
        load_partition(built.data_dir, "header", built.index.model_key)


def test_a_partition_under_the_crossover_never_opens_its_ann_index(
        built: BuiltIndex, hashed_embedder: HashedEmbedder, caplog: pytest.LogCaptureFixture):
    from rag_pipeline.core.index import store
    from rag_pipeline.core.index.generations import current_generation
    from rag_pipeline.core.retrieval.choices import Retriever

    warehouse = Warehouse(built.data_dir)
    generation = current_generation(warehouse, "header", built.index.model_key)
    table = Path(warehouse.full_path(generation.files["ann_index"]))
    # Planted: the ANN index's one-row table cut in half. The index was opened on every load,
    # so every question (BM25 alone too) failed reading it, on 6 chunks that never use it.
    raw = table.read_bytes()
    table.write_bytes(raw[:len(raw) // 2])
    store._load.cache_clear()
    index = load_partition(built.data_dir, "header", built.index.model_key)
    for retriever in Retriever:
        answer = ask("how are timeouts configured", index, hashed_embedder,
                     replace(AskSettings(), retrieval=replace(AskSettings().retrieval,
                                                              retriever=retriever)))
        assert answer.generation == generation.id
    assert index.ann_source is not None and not index.ann_source.opened
    with caplog.at_level("WARNING", logger="rag_pipeline.core.index.store"):
        assert index.ann is None  # asked for by name: unreadable, logged, the exact scan serves
    assert index.ann_source.opened
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == [
        f"the ANN index table {table} cannot be read"]


def test_a_left_out_phrase_scoped_to_sections_is_cited_only_from_them():
    # Found by a new team: the uncalculated formulas of a Budget sheet were named on every
    # citation of the workbook, its Invoices rows too.
    info = DocumentInfo("book.xlsx", "book", "", "xlsx", (),
                        left_out=("6 formula cell(s) never calculated, so empty",
                                  "1 comment(s) left out (reviewers' remarks)"),
                        left_out_scopes=(((100, 200), (300, 350)), ()))
    everywhere = ("1 comment(s) left out (reviewers' remarks)",)
    assert [info.left_out_at(start, end) for start, end in (
        (150, 160), (90, 101), (199, 250), (200, 300), (0, 100), (340, 400))] == [
        info.left_out, info.left_out, info.left_out, everywhere, everywhere, info.left_out]
    unscoped = DocumentInfo("a.md", "a", "", "markdown", (), left_out=("text read as x",))
    assert unscoped.left_out_at(0, 5) == ("text read as x",)
