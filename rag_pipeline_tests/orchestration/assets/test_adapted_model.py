"""The ``adapted_model`` asset: declared only with an adapted model, trained by its own job."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.core.config.keys import model_specs
from rag_pipeline.core.config.parse import parse_config
from rag_pipeline.core.embedding.adaptation import trained_result
from rag_pipeline.definitions import ADAPT_JOB, build_definitions
from rag_pipeline_tests.core.embedding.test_adaptation import _config, _corpus


def _project(tmp_path: Path):
    corpus = _corpus(tmp_path / "corpus", "apples")
    specs = model_specs(parse_config(_config(corpus, tmp_path), tmp_path))
    defs = build_definitions(data_dir=tmp_path / "data", corpus_dir=corpus, models=specs)
    return defs, specs


def test_the_asset_and_its_job_exist_only_with_an_adapted_model(tmp_path: Path):
    defs, specs = _project(tmp_path)
    asset = defs.resolve_assets_def("adapted_model")
    assert asset.partitions_def.get_partition_keys() == [specs[1].key]
    assert asset.group_names_by_key[dg.AssetKey("adapted_model")] == "models"
    assert defs.resolve_job_def(ADAPT_JOB).tags["rag_pipeline/compute"] == "model"
    # Held by the run queue as every model-loading run is, however it was launched.
    [node] = [n for n in defs.resolve_asset_graph().asset_nodes if n.key.path == ["adapted_model"]]
    assert node.pools == {"model"}
    plain = build_definitions(data_dir=tmp_path / "data", models=specs[:1])
    assert dg.AssetKey("adapted_model") not in {k for a in plain.assets for k in a.keys}


@pytest.mark.slow
def test_the_job_trains_once_with_metadata_and_keeps_a_trained_folder(tmp_path: Path):
    defs, specs = _project(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    job = defs.resolve_job_def(ADAPT_JOB)
    first = job.execute_in_process(instance=instance, partition_key=specs[1].key)
    metadata = first.asset_materializations_for_node("adapted_model")[0].metadata
    assert (metadata["pairs"].value, metadata["epochs"].value, metadata["steps"].value) == (8, 1, 2)
    assert metadata["base"].value == specs[0].key
    assert metadata["pairs_sha256"].value == specs[1].adaptation.pairs_sha256
    weights = trained_result(specs[1]).weights_sha256
    assert metadata["weights_sha256"].value == weights
    second = job.execute_in_process(instance=instance, partition_key=specs[1].key)
    logs = [entry.user_message for entry in instance.all_logs(second.run_id)]
    assert f"{specs[1].key} is trained and its files match: kept" in logs
    assert second.asset_materializations_for_node("adapted_model")[0].metadata[
        "weights_sha256"].value == weights
