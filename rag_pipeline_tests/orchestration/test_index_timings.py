"""Where the runs' time went, read back from their events and the embeddings metadata."""

from __future__ import annotations

import time

import dagster as dg
import pytest

from rag_pipeline.definitions import build_definitions
from rag_pipeline.orchestration.automation import CHUNKS_JOB, DOCUMENTS_JOB, EMBEDDINGS_JOB
from rag_pipeline.orchestration.index_timings import IndexTimings, index_timings
from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus
from rag_pipeline_tests.fake_embedder import HashedEmbedder, hashed_spec


def test_stages_add_up_and_the_rest_is_outside_the_steps():
    timings = IndexTimings(wall=10.0)
    timings.add("encoding", 6.0)
    timings.add("encoding", 2.0)
    timings.add("writing", -0.5)  # a clock step backwards counts as nothing
    assert timings.stages == {"encoding": 8.0, "writing": 0.0}
    assert timings.outside_steps == 2.0
    assert timings.encoding_share == 0.8


def test_the_runs_of_an_index_are_split_into_their_stages(tmp_path, monkeypatch: pytest.MonkeyPatch):
    spec = hashed_spec()
    monkeypatch.setattr("rag_pipeline.orchestration.assets.embeddings.load_embedder",
                        lambda s, *_: HashedEmbedder(s))
    defs = build_definitions(data_dir=tmp_path / "data",
                             corpus_dir=write_corpus(tmp_path / "corpus", TINY_DOCS), models=[spec])
    instance = dg.DagsterInstance.ephemeral()
    key = dg.MultiPartitionKey({"chunker": "header", "model": spec.key})
    started = time.time()
    run_ids = []
    for job, partition in ((DOCUMENTS_JOB, None), (CHUNKS_JOB, "header"), (EMBEDDINGS_JOB, key)):
        result = defs.resolve_job_def(job).execute_in_process(instance=instance,
                                                              partition_key=partition)
        run_ids.append(result.run_id)
    wall = time.time() - started
    timings = index_timings(instance, run_ids, wall)
    assert timings.runs == 3
    assert list(timings.stages) == ["extraction", "chunking", "access labels", "BM25 tables",
                                    "model load",
                                    "encoding", "writing", "embeddings checks and reads", "ANN build",
                                    "publish"]
    assert timings.embedded == 5  # the tiny corpus's 5 header chunks
    assert sum(timings.stages.values()) <= wall
    assert timings.outside_steps == pytest.approx(wall - sum(timings.stages.values()))
    assert timings.encoded == {spec.key: (5, pytest.approx(timings.stages["encoding"]))}


def test_each_model_is_timed_alone_and_only_the_default_against_the_fp32_floor(
        tmp_path, capsys, monkeypatch: pytest.MonkeyPatch):
    """Found by an evaluation user: with the int8 model in the profile, ``--timings`` put both
    models' chunks over both models' seconds against the default model's fp32 floor."""
    from rag_pipeline.cli import index_timings as cli_timings
    from rag_pipeline.core.storage.warehouse import Warehouse

    spec = hashed_spec()
    timings = IndexTimings(wall=20.0, encoded={spec.key: (100, 10.0), "int8-model@1": (100, 2.0)})
    floors = []

    def floor(warehouse, asked):
        floors.append(asked.key)
        return 20.0

    monkeypatch.setattr(cli_timings, "floor_chunks_per_second", floor)
    cli_timings.echo_timings(timings, Warehouse(tmp_path), spec)
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2:] == [
        f"  encoding {spec.key}: 100 chunks at 10.0 chunks/s, 50% of the fp32 floor (20.0 chunks/s); "
        "50% of the wall time",
        "  encoding int8-model@1: 100 chunks at 50.0 chunks/s; 10% of the wall time"]
    assert floors == [spec.key]
