"""The bundled corpus indexed once for the CLI's slow tests (the production partition)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.core.ingest.corpus_export import export_python_reference
from rag_pipeline.definitions import build_definitions
from rag_pipeline.orchestration.automation import CHUNKS_JOB, DOCUMENTS_JOB, EMBEDDINGS_JOB


@pytest.fixture(scope="package")
def bundled_data_dir(tmp_path_factory: pytest.TempPathFactory, minilm) -> Path:
    """Builds only the production partition (header x all-MiniLM-L6-v2) of the Python Language
    Reference through the Dagster jobs, so the real model embeds the real corpus once."""
    root = tmp_path_factory.mktemp("cli")
    corpus = root / "python-reference"
    export_python_reference(corpus)
    data = root / "data"
    defs = build_definitions(data_dir=data, corpus_dir=corpus, models=[minilm])
    instance = dg.DagsterInstance.ephemeral()
    assert defs.resolve_job_def(DOCUMENTS_JOB).execute_in_process(instance=instance).success
    assert defs.resolve_job_def(CHUNKS_JOB).execute_in_process(
        instance=instance, partition_key="header").success
    assert defs.resolve_job_def(EMBEDDINGS_JOB).execute_in_process(
        instance=instance, partition_key=dg.MultiPartitionKey(
            {"chunker": "header", "model": minilm.key})).success
    return data
