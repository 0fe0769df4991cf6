"""The loaded Definitions: exact asset keys, partitions, checks, jobs, schedule and sensor."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.core.storage.table_names import EVAL_TABLES
from rag_pipeline.definitions import defs
from rag_pipeline.project_paths import PROJECT_ROOT

CHUNKERS = ["blind", "blind_overlap", "boundaries", "boundaries_overlap", "header",
            "header_overlap"]
MODELS = ["all-MiniLM-L6-v2@53aa5117", "all-MiniLM-L6-v2-int8@b4e41131"]
"""As declared in rag_pipeline.toml and pinned by rag_pipeline.lock.json."""


ASSET_GROUPS = {
    "ingest": {"documents", "chunks"},
    "index": {"bm25_terms", "bm25_chunks", "bm25_postings", "bm25_params", "embeddings", "ann_index",
              "access", "index_generation"},
    "evaluation": {"eval_ranks", "eval_summary", "eval_paired", "eval_sweep", "eval_gold_errors",
                   "eval_gate_cv"}}
"""Every asset by its group, as the definitions declare them and the UI's GraphQL lists them."""


def test_asset_keys_partitions_and_checks():
    graph = defs.resolve_asset_graph()
    # One asset per table: these are exactly the DuckDB views an index holds.
    assert {k.to_user_string() for k in graph.get_all_asset_keys()} == {
        "documents", "chunks", "bm25_terms", "bm25_chunks", "bm25_postings", "bm25_params",
        "embeddings", "ann_index", "access", "index_generation", "eval_ranks", "eval_summary",
        "eval_paired", "eval_sweep",
        "eval_gold_errors", "eval_gate_cv"}
    assert graph.get(dg.AssetKey("documents")).partitions_def is None
    assert graph.get(dg.AssetKey("chunks")).partitions_def.get_partition_keys() == CHUNKERS
    for name in ("bm25_terms", "bm25_chunks", "bm25_postings", "bm25_params", "access"):
        assert graph.get(dg.AssetKey(name)).partitions_def.get_partition_keys() == CHUNKERS
        assert graph.get(dg.AssetKey(name)).parent_keys == {dg.AssetKey("chunks")}
    assert graph.get(dg.AssetKey("embeddings")).parent_keys == {dg.AssetKey("chunks")}
    # Publication depends on every table of the generation (core.index.GENERATION_TABLES).
    assert graph.get(dg.AssetKey("index_generation")).parent_keys == {dg.AssetKey(k) for k in (
        "documents", "chunks", "bm25_terms", "bm25_chunks", "bm25_postings", "bm25_params",
        "embeddings", "ann_index", "access")}
    # The ANN index: one graph per embeddings partition, built from its vectors.
    assert graph.get(dg.AssetKey("ann_index")).parent_keys == {dg.AssetKey("embeddings")}
    for name in ("embeddings", "ann_index", "index_generation"):
        keys = graph.get(dg.AssetKey(name)).partitions_def.get_partition_keys()
        assert sorted(str(k) for k in keys) == sorted([f"{c}|{m}" for c in CHUNKERS for m in MODELS])
    for name in ("eval_ranks", "eval_summary", "eval_paired", "eval_sweep", "eval_gold_errors",
                 "eval_gate_cv"):
        assert graph.get(dg.AssetKey(name)).partitions_def.get_partition_keys() == MODELS
        # The evaluation reads published generations, so it depends on their publication.
        assert graph.get(dg.AssetKey(name)).parent_keys == {dg.AssetKey("index_generation")}
    checks = {(k.asset_key.to_user_string(), k.name) for k in graph.asset_check_keys}
    assert checks == {("chunks", "offsets_slice_exactly"), ("chunks", "chunk_ids_unique"),
                      ("chunks", "covers_every_character"), ("embeddings", "vectors_unit_length"),
                      ("embeddings", "one_model_per_partition"),
                      ("embeddings", "vectors_match_model"),
                      ("documents", "no_failed_documents")}
    # Every check is described, with a history per partition; every check that protects a
    # reader is blocking. A failed document only warns (the asset shows amber, the run goes on).
    for key in graph.asset_check_keys:
        spec = graph.get_check_spec(key)
        assert spec.description
        assert spec.blocking == (key.name != "no_failed_documents")
        assert spec.partitions_def == graph.get(key.asset_key).partitions_def


def test_groups_owners_tags_and_freshness():
    graph = defs.resolve_asset_graph()
    groups: dict[str, set[str]] = {}
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        groups.setdefault(node.group_name, set()).add(key.to_user_string())
        assert node.owners == ["team:rag-pipeline"]
        assert node.tags["stage"] == node.group_name
        # No automation condition: Dagster would start its default sensor, whose runs
        # belong to no job.
        assert node.automation_condition is None
    assert groups == ASSET_GROUPS
    policy = graph.get(dg.AssetKey("documents")).freshness_policy
    assert policy == dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=25))


def test_jobs_schedule_and_sensor():
    repo = defs.get_repository_def()
    assert sorted(j.name for j in repo.get_all_jobs() if not j.name.startswith("__")) == [
        "chunks_job", "documents_job", "embeddings_job", "eval_job"]
    selected = {name: sorted(k.to_user_string() for k in defs.resolve_job_def(name).asset_layer
                             .executable_asset_keys)
                for name in ("documents_job", "chunks_job", "embeddings_job", "eval_job")}
    assert selected == {
        "documents_job": ["documents"],
        "chunks_job": ["access", "bm25_chunks", "bm25_params", "bm25_postings", "bm25_terms",
                       "chunks"],
        "embeddings_job": ["ann_index", "embeddings", "index_generation"],
        "eval_job": ["eval_gate_cv", "eval_gold_errors", "eval_paired", "eval_ranks",
                     "eval_summary", "eval_sweep"]}
    schedule = defs.resolve_schedule_def("nightly_index")
    assert (schedule.cron_schedule, schedule.job_name) == ("0 2 * * *", "documents_job")
    assert [s.name for s in defs.sensors] == ["corpus_watch", "index_automation"]
    watch = defs.resolve_sensor_def("corpus_watch")
    assert ([t.job_name for t in watch.targets], watch.minimum_interval_seconds) == (
        ["documents_job"], 5)
    sensor = defs.resolve_sensor_def("index_automation")
    # The jobs it launches, as its description says (it listed documents_job too: a new operator).
    assert sorted(t.job_name for t in sensor.targets) == ["chunks_job", "embeddings_job", "eval_job"]
    assert sensor.minimum_interval_seconds == 5


@pytest.mark.slow
def test_workspace_yaml_loads_through_dagster_cli(tmp_path: Path):
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [str(Path(sys.executable).parent / "dagster"), "definitions", "validate", "-w",
         "workspace.yaml"], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Validation successful for code location rag_pipeline" in (
        result.stdout + result.stderr)


def test_the_run_queue_lets_as_many_model_runs_as_the_cores_allow(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch):
    # 2 cores, torch threads = every core per run: one model-loading run at a time, and a
    # chunking run beside it; held by the assets' pools, per run, however a run was launched.
    shutil.copy(PROJECT_ROOT / "dagster_home" / "dagster.yaml", tmp_path / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with dg.DagsterInstance.get() as instance:
        concurrency = instance.get_concurrency_config()
        dequeue_seconds = instance.run_coordinator.dequeue_interval_seconds
    assert concurrency.run_queue_config.max_concurrent_runs == 2
    assert concurrency.run_queue_config.tag_concurrency_limits == []
    assert concurrency.run_queue_config.should_block_op_concurrency_limited_runs
    assert concurrency.pool_config.pool_granularity.value == "run"
    assert concurrency.pool_config.default_pool_limit == 1
    # Every second: each stage of an edit waits in the queue once.
    assert dequeue_seconds == 1
    pools = {node.key.to_user_string(): node.pools
             for node in defs.resolve_asset_graph().asset_nodes if node.pools}
    assert pools == {"documents": {"documents"}, "embeddings": {"model"},
                     **{table: {"model"} for table in EVAL_TABLES}}
    # The tags stay, to filter the runs list by.
    assert defs.resolve_job_def("documents_job").tags["rag_pipeline/stage"] == "documents"
    tagged = {name: defs.resolve_job_def(name).tags.get("rag_pipeline/compute")
              for name in ("documents_job", "chunks_job", "embeddings_job", "eval_job")}
    assert tagged == {"documents_job": None, "chunks_job": None, "embeddings_job": "model",
                      "eval_job": "model"}
