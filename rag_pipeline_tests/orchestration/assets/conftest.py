"""A tiny index materialised through the project's Dagster jobs, with the hashed stand-in model
(no torch), so asset checks can be run against tables with planted flaws."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.core.embedding.models import ModelSpec
from rag_pipeline.definitions import build_definitions
from rag_pipeline.orchestration.automation import DOCUMENTS_JOB
from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus
from rag_pipeline_tests.fake_embedder import HashedEmbedder, hashed_spec


@dataclass
class TinyProject:
    defs: dg.Definitions
    instance: dg.DagsterInstance
    data_dir: Path
    spec: ModelSpec

    def run(self, job: str, partition_key: str | dg.MultiPartitionKey | None = None,
            ) -> dg.ExecuteInProcessResult:
        return self.defs.resolve_job_def(job).execute_in_process(
            instance=self.instance, partition_key=partition_key, raise_on_error=False)

    def embeddings_key(self, chunker: str = "header") -> dg.MultiPartitionKey:
        return dg.MultiPartitionKey({"chunker": chunker, "model": self.spec.key})


def check_outcomes(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    """``check name -> passed`` for every check evaluated in the run."""
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


@pytest.fixture(scope="module")
def tiny_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TinyProject]:
    """Documents and the ``header`` chunks of the tiny corpus, materialised once per module."""
    root = tmp_path_factory.mktemp("tiny-project")
    spec = hashed_spec()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("rag_pipeline.orchestration.assets.embeddings.load_embedder",
                      lambda s, *_: HashedEmbedder(s))
        defs = build_definitions(data_dir=root / "data",
                                 corpus_dir=write_corpus(root / "corpus", TINY_DOCS), models=[spec])
        project = TinyProject(defs, dg.DagsterInstance.ephemeral(), root / "data", spec)
        assert project.run(DOCUMENTS_JOB).success
        yield project


def corrupting(original: Callable, corrupt: Callable) -> Callable:
    """``original`` with ``corrupt`` applied to the table it returns (first of its results)."""

    def wrapped(*args, **kwargs):
        table, stats = original(*args, **kwargs)
        return corrupt(table), stats

    return wrapped
