"""The ``embeddings`` asset checks gate publication: run by Dagster on tables with planted
flaws (the hashed stand-in model embeds; the flaw is planted between the core and the write, or
in the model), each fails its blocking check, ``index_generation`` does not run, and readers keep
the generation they had."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from rag_pipeline.core.embedding.vectors import vector_matrix
from rag_pipeline.core.index.generations import current_generation
from rag_pipeline.core.index.plan import Stage, Step, index_plan
from rag_pipeline.core.index.store import load_partition
from rag_pipeline.core.retrieval.dense import cosine_distances, top_k
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.orchestration.assets import embeddings as embeddings_asset
from rag_pipeline.orchestration.automation import CHUNKS_JOB, EMBEDDINGS_JOB, active_runs, launchable
from rag_pipeline.orchestration.index_launch import index_is_current
from rag_pipeline.orchestration.run_tags import GENERATION_TAG
from rag_pipeline_tests.fake_embedder import HashedEmbedder
from rag_pipeline_tests.orchestration.assets.conftest import TinyProject, check_outcomes, corrupting

ALL_PASS = {"vectors_unit_length": True, "one_model_per_partition": True,
            "vectors_match_model": True}
QUESTION = "How long does a network call wait before giving up?"


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
    return table.set_column(table.schema.get_field_index("model_fingerprint"), "model_fingerprint",
                            pa.array(fingerprints, pa.string()))


class DriftedEmbedder(HashedEmbedder):
    """Planted flaw (trips vectors_match_model): the same model key, but its vectors have moved
    (every coordinate shifted by one place: still unit length, no longer the stored space)."""

    def embed(self, texts, **kwargs) -> np.ndarray:
        return np.roll(super().embed(texts, **kwargs), 1, axis=1)


def _served(project: TinyProject) -> tuple[str, list[str]]:
    """The served generation id and the top-3 chunk ids a dense query gets from it."""
    index = load_partition(project.data_dir, "header", project.spec.key)
    distances = cosine_distances(index.vectors, HashedEmbedder(project.spec).embed_query(QUESTION))
    return index.generation, [index.chunk_ids[i] for i in top_k(distances, 3)]


def _launchable(project: TinyProject) -> list[Step]:
    """What the sensor would launch for the header chunker and the model."""
    chunkers, models = ["header"], [project.spec.key]
    return launchable(index_plan(Warehouse(project.data_dir), chunkers, models), project.instance,
                      chunkers, models, active_runs(project.instance))


@pytest.fixture(scope="module")
def published(tiny_project: TinyProject) -> str:
    """The header chunks embedded by the clean model and published: the generation id."""
    assert tiny_project.run(CHUNKS_JOB, "header").success
    result = tiny_project.run(EMBEDDINGS_JOB, tiny_project.embeddings_key())
    assert result.success
    assert check_outcomes(result) == ALL_PASS
    materialised = [e.asset_key.to_user_string() for e in result.get_asset_materialization_events()]
    assert materialised == ["embeddings", "ann_index", "index_generation"]
    generation = current_generation(Warehouse(tiny_project.data_dir), "header", tiny_project.spec.key)
    run = tiny_project.instance.get_run_by_id(result.run_id)
    # Every tag of the run a person reads: the stage, the partition, the generation published.
    assert {k: v for k, v in run.tags.items() if not k.startswith(".")} == {
        "rag_pipeline/stage": "index", "rag_pipeline/compute": "model",
        "dagster/partition": f"header|{tiny_project.spec.key}",
        "dagster/partition_set": "embeddings_job_partition_set",
        "dagster/partition/chunker": "header", "dagster/partition/model": tiny_project.spec.key,
        GENERATION_TAG: generation.id}
    return generation.id


@pytest.mark.parametrize(("plant", "failing"), [
    ("stretch", {"vectors_unit_length"}),
    ("restamp", {"one_model_per_partition"}),
    ("drift", {"vectors_match_model"}),
])
def test_a_failed_blocking_check_leaves_the_served_generation(
        tiny_project: TinyProject, published: str, monkeypatch: pytest.MonkeyPatch, plant: str,
        failing: set[str]):
    before = _served(tiny_project)
    assert before[0] == published
    if plant == "drift":
        monkeypatch.setattr(embeddings_asset, "load_embedder", lambda s, *_: DriftedEmbedder(s))
    else:
        corrupt = {"stretch": _stretch_first_vector, "restamp": _restamp_first_row}[plant]
        monkeypatch.setattr(embeddings_asset, "embeddings_table",
                            corrupting(embeddings_asset.embeddings_table, corrupt))
    result = tiny_project.run(EMBEDDINGS_JOB, tiny_project.embeddings_key())

    # The check fails, as a blocking check of this partition, and fails the run ...
    assert not result.success
    evaluations = result.get_asset_check_evaluations()
    assert {e.check_name: e.passed for e in evaluations} == {
        name: name not in failing for name in ALL_PASS}
    assert {(e.blocking, e.partition) for e in evaluations} == {
        (True, str(tiny_project.embeddings_key()))}
    # ... so neither ann_index nor index_generation runs, and a query before and after gets the same answer
    # from the same generation.
    materialised = [e.asset_key.to_user_string() for e in result.get_asset_materialization_events()]
    assert materialised == ["embeddings"]
    assert _served(tiny_project) == before

    # The evaluation of this model waits: the sensor launches no eval_job run. Flawed vectors
    # leave the partition's embeddings due (for the same inputs: the sensor requests attempt 2
    # only after its back-off, test_index_automation_retry.py); a drifted model wrote nothing new.
    warehouse = Warehouse(tiny_project.data_dir)
    steps = _launchable(tiny_project)
    assert [(s.stage, s.chunker) for s in steps] == (
        [] if plant == "drift" else [(Stage.EMBEDDINGS, "header")])
    assert index_is_current(warehouse, ["header"], [tiny_project.spec.key],
                            evaluate=False) is (plant == "drift")

    # The clean model again: the checks pass and the partition serves the same content again.
    monkeypatch.undo()
    monkeypatch.setattr(embeddings_asset, "load_embedder", lambda s, *_: HashedEmbedder(s))
    again = tiny_project.run(EMBEDDINGS_JOB, tiny_project.embeddings_key())
    assert again.success and check_outcomes(again) == ALL_PASS
    assert _served(tiny_project) == before
    assert [(s.stage, s.model) for s in _launchable(tiny_project)] == [
        (Stage.EVAL, tiny_project.spec.key)]
