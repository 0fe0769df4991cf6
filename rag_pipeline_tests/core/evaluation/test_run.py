"""Running an evaluation: the index it needs named, with what to do, when it is not there."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_pipeline.core.evaluation.run import run_eval
from rag_pipeline.core.storage.warehouse import IndexNotBuiltError, Warehouse
from rag_pipeline_tests.fake_embedder import hashed_spec


def test_an_evaluation_without_the_models_index_names_the_folder_and_what_to_do(tmp_path: Path):
    spec = hashed_spec()
    with pytest.raises(IndexNotBuiltError) as raised:
        run_eval(Warehouse(tmp_path), spec, tmp_path / "gold.jsonl", tmp_path / "ood.jsonl")
    assert str(raised.value) == (
        f"no published index for model {spec.key} in the data folder {tmp_path}: run "
        "`rag-pipeline index` first, or name the configuration that built it (--config, as `init` "
        "printed it) or its data folder (--data-dir)")


def test_an_adapted_model_not_built_is_told_to_be_trained_and_built(tmp_path: Path):
    """Found by a helper following models.md: before `adapt`, `eval --model <adapted>` said to
    run `index`, which builds nothing for it without its profile, and it is not trained."""
    from rag_pipeline.core.config.keys import declared_models

    adapted = next(spec for spec in declared_models() if spec.adaptation is not None)
    with pytest.raises(IndexNotBuiltError) as raised:
        run_eval(Warehouse(tmp_path), adapted, tmp_path / "gold.jsonl", tmp_path / "ood.jsonl")
    assert str(raised.value) == (
        f"no published index for model {adapted.key} in the data folder {tmp_path}: it is a model "
        "adapted to the corpus: `rag-pipeline adapt` trains it, then `rag-pipeline index` with a "
        "profile that lists it builds its partitions (the bundled configuration's "
        "`--profile adapted`)")


def test_chunkers_built_from_older_documents_are_left_out_and_named(tmp_path: Path, monkeypatch):
    # Found by a team lead comparing chunkers: after an edit, a production `index` rebuilt only
    # `header`, and the evaluation scored it against `blind` still on the old documents (and
    # checked the gold needles against blind's): the paired tests set two corpora side by side.
    import json

    from rag_pipeline.core.chunking.strategies import ChunkingStrategy
    from rag_pipeline.core.evaluation import run
    from rag_pipeline.core.evaluation.run import behind_note, chunkers_behind
    from rag_pipeline.core.index.partition_build import build_partition
    from rag_pipeline.core.ingest import extract_corpus
    from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus
    from rag_pipeline_tests.fake_embedder import HashedEmbedder

    embedder = HashedEmbedder()
    monkeypatch.setattr(run, "load_embedder", lambda spec: embedder)
    corpus = write_corpus(tmp_path / "corpus", TINY_DOCS)
    warehouse = Warehouse(tmp_path / "data")
    for strategy in (ChunkingStrategy.BLIND, ChunkingStrategy.HEADER):
        build_partition(warehouse, extract_corpus(corpus).records, strategy, embedder)
    key = embedder.spec.key
    assert chunkers_behind(warehouse, key, ["blind", "header"]) == []
    config = corpus / "guide" / "config.md"
    config.write_text(config.read_text(encoding="utf-8").replace("seventeen", "nineteen"),
                      encoding="utf-8")
    build_partition(warehouse, extract_corpus(corpus).records, ChunkingStrategy.HEADER, embedder)
    assert chunkers_behind(warehouse, key, ["blind", "header"]) == ["blind"]
    gold = tmp_path / "gold.jsonl"
    gold.write_text("\n".join(json.dumps(line) for line in [
        {"corpus": "tiny", "documents": sorted(TINY_DOCS)},
        {"id": "g1", "document": "guide/config.md", "needle": "gives up after nineteen seconds",
         "question": "When does a network call give up?", "ticket": "calls hang, timeout?"}]) + "\n",
        encoding="utf-8")
    report = run.run_eval(warehouse, embedder.spec, gold, tmp_path / "ood.jsonl")
    assert (report.behind, sorted(report.generations), report.gold_errors) == (("blind",), ["header"], [])
    assert {row.chunker for row in report.summary} == {"header"}
    assert behind_note(report.behind) == (
        "not evaluated: blind: their served generations were built from older documents than the "
        "others' (an `index` whose profile builds them brings them up to date)")


def test_an_empty_gold_file_says_it_is_empty(tmp_path: Path):
    from rag_pipeline.core.config.gold_file import GoldCorpus, GoldSet
    from rag_pipeline.core.evaluation.gold import NoGoldSetError, check_corpus

    for corpus, holds in ((None, "it is empty"), (GoldCorpus("team", ("a.md",)), "only its corpus line")):
        with pytest.raises(NoGoldSetError) as raised:
            check_corpus(GoldSet(tmp_path / "gold.jsonl", corpus, ()), ["a.md"])
        assert str(raised.value).startswith(
            f"no gold set for this corpus: {tmp_path / 'gold.jsonl'} holds no gold line ({holds}); ")


def test_an_evaluation_of_older_generations_or_documents_is_stale(tmp_path: Path):
    # Found by a team: after an edit and a production `index`, the int8 model's rows in the
    # eval tables still scored the old documents, and `index` said nothing of them.
    import pyarrow as pa

    from rag_pipeline.core.chunking.strategies import ChunkingStrategy
    from rag_pipeline.core.evaluation.run import evaluation_is_stale
    from rag_pipeline.core.index.generations import current_generation
    from rag_pipeline.core.index.partition_build import build_partition
    from rag_pipeline.core.ingest import extract_corpus
    from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus
    from rag_pipeline_tests.fake_embedder import HashedEmbedder

    embedder = HashedEmbedder()
    key = embedder.spec.key
    corpus = write_corpus(tmp_path / "corpus", TINY_DOCS)
    warehouse = Warehouse(tmp_path / "data")
    build_partition(warehouse, extract_corpus(corpus).records, ChunkingStrategy.HEADER, embedder)
    assert evaluation_is_stale(warehouse, key) is False  # never evaluated
    warehouse.write("eval_summary", pa.table({"x": [1]}), {"model": key}, inputs={
        "header": current_generation(warehouse, "header", key).id, "gold set": "0" * 16})
    assert evaluation_is_stale(warehouse, key) is False
    config = corpus / "guide" / "config.md"
    config.write_text(config.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    build_partition(warehouse, extract_corpus(corpus).records, ChunkingStrategy.HEADER, embedder)
    assert evaluation_is_stale(warehouse, key) is True
