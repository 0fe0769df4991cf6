"""``index_plan``: what a build must still run; here, when the evaluation is due."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.index.generations import current_generation
from rag_pipeline.core.index.partition_build import build_partition
from rag_pipeline.core.index.plan import EVAL_SUMMARY, Stage, index_plan
from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus
from rag_pipeline_tests.fake_embedder import HashedEmbedder

SETS = {"gold set": "166a12f6335af744", "out-of-domain set": "none"}


def test_an_evaluation_that_also_scored_another_profiles_chunkers_is_not_due_again(tmp_path: Path):
    # Found by a team lead: after `index --profile evaluation`, every production `index` ran the
    # evaluation and then failed: "eval_job ... is still due after its run ... succeeded" (it
    # scored all six chunkers; the plan wanted exactly the one the profile builds).
    embedder = HashedEmbedder()
    key = embedder.spec.key
    records = extract_corpus(write_corpus(tmp_path / "corpus", TINY_DOCS)).records
    warehouse = Warehouse(tmp_path / "data")
    for strategy in (ChunkingStrategy.BLIND, ChunkingStrategy.HEADER):
        build_partition(warehouse, records, strategy, embedder)
    served = {c: current_generation(warehouse, c, key).id for c in ("blind", "header")}

    def scored(generations: dict[str, str]) -> None:
        warehouse.write(EVAL_SUMMARY, pa.table({"x": [1]}), {"model": key},
                        inputs={**generations, **SETS})

    def due(chunkers: list[str]) -> list[Stage]:
        return [step.stage for step in index_plan(warehouse, chunkers, [key], eval_sets=SETS)]

    scored(served)
    assert (due(["header"]), due(["blind", "header"])) == ([], [])
    scored({**served, "blind": "20260101T000000Z-00000000"})  # blind's earlier generation
    assert (due(["header"]), due(["blind", "header"])) == ([], [Stage.EVAL])
    scored({"blind": served["blind"]})  # header never scored
    assert due(["header"]) == [Stage.EVAL]
    assert index_plan(warehouse, ["header"], [key], eval_sets={**SETS, "gold set": "other"}) != ()
