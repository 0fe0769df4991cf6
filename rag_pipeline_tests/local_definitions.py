"""A code location for the tests of ``rag-pipeline index``'s own runs
(``rag_pipeline_tests/orchestration/test_index_local.py``): the production build of the corpus
and data folder named by ``RAG_PIPELINE_CORPUS`` and ``RAG_PIPELINE_DATA_DIR``, with the hashed
stand-in model, loaded by the runs' worker (``--definitions
rag_pipeline_tests.local_definitions:defs``). ``RAG_TEST_PLANT`` plants a fault in the
documents step of the worker: ``kill`` (the step kills its own process, as ``kill -9`` of the
worker does) or ``block:<file>`` (the step writes its pid to the file, then waits to be
killed)."""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from pathlib import Path

from rag_pipeline.core.config.build_context import BuildContext
from rag_pipeline.core.embedding import embedder as embedder_module
from rag_pipeline.core.index import build as index_build
from rag_pipeline.definitions import definitions_of
from rag_pipeline.orchestration.assets import embeddings as embeddings_asset
from rag_pipeline.project_paths import resolve_context
from rag_pipeline_tests.fake_embedder import HashedEmbedder, hashed_spec


def _kill_self(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)


def _block(reached: Path):
    def extract_corpus(*args, **kwargs):
        reached.write_text(str(os.getpid()), encoding="utf-8")
        while True:
            signal.pause()

    return extract_corpus


def build(environ: Mapping[str, str] = os.environ) -> BuildContext:
    """The build the worker's definitions are made from (and the test's own, from the
    environment it starts the worker with)."""
    return resolve_context(environ, profile="production", models=[hashed_spec()])


def __getattr__(name: str):
    """``defs``, made when the worker asks for it: the stand-in model and the planted fault
    are patched into the worker's process then, never into a process that only imports this
    module (a test session that collects it would otherwise embed every later test's chunks
    with the stand-in)."""
    if name != "defs":
        raise AttributeError(name)
    embeddings_asset.load_embedder = lambda spec, *_: HashedEmbedder(spec)
    embedder_module.load_embedder = embeddings_asset.load_embedder
    plant = os.environ.get("RAG_TEST_PLANT", "")
    if plant == "kill":
        index_build.extract_corpus = _kill_self
    elif plant.startswith("block:"):
        index_build.extract_corpus = _block(Path(plant.removeprefix("block:")))
    return definitions_of(build())
