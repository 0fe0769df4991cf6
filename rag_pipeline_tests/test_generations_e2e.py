"""A re-index never breaks the served index: readers during a re-index, and kill -9 at three
moments of one, through the real assets (each kill is a real SIGKILL of the indexing process)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from rag_pipeline.core.embedding.embedder import load_embedder
from rag_pipeline.core.embedding.vector_cache import VectorCache
from rag_pipeline.core.index.generations import current_generation
from rag_pipeline.core.index.store import load_partition
from rag_pipeline.core.retrieval.retriever import embed_question, retrieve
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.definitions import build_definitions
from rag_pipeline_tests.index_runs import run_index

pytestmark = pytest.mark.slow

# The indexing process: the project's own in-process index run, with one hook that kills the
# process with SIGKILL at the named moment (nothing is cleaned up, as with a real kill -9).
INDEX_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    import dagster as dg
    import rag_pipeline.orchestration.assets.embeddings as embeddings_asset
    import rag_pipeline.core.index.build as build
    from rag_pipeline.core.embedding.vector_cache import VectorCache
    from rag_pipeline.definitions import build_definitions
    from rag_pipeline_tests.index_runs import run_index

    data, corpus, moment = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    if moment == "before_embedding":
        embeddings_asset.load_embedder = die
    elif moment == "mid_embedding":
        original = VectorCache.checkpoint
        def checkpoint_then_die(self, shas, vectors):
            original(self, shas, vectors)
            die()
        VectorCache.checkpoint = checkpoint_then_die
    elif moment == "before_publish":  # the one build path publishes (core/index/build.py)
        build.publish = die
    defs = build_definitions(data_dir=data, corpus_dir=corpus)
    run_index(defs, dg.DagsterInstance.ephemeral(), echo=lambda _: None, evaluate=False)
""")

QUESTION = "how long before a network call times out"


def _index_process(data: Path, corpus: Path, moment: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run([sys.executable, "-c", INDEX_SCRIPT, str(data), str(corpus), moment],
                          env=env, capture_output=True, text=True, timeout=900)


def test_readers_always_get_a_whole_generation_through_kills_and_a_reindex(
        tmp_path: Path, tiny_corpus: Path, minilm):
    data = tmp_path / "data"
    defs = build_definitions(data_dir=data, corpus_dir=tiny_corpus, models=[minilm])
    run_index(defs, dg.DagsterInstance.ephemeral(), echo=lambda _: None, evaluate=False)
    warehouse = Warehouse(data)
    old = current_generation(warehouse, "header", minilm.key)
    embedder = load_embedder(minilm)
    query = embed_question(embedder, QUESTION)

    answers: list[tuple[str, int, str]] = []
    errors: list[str] = []
    stop = threading.Event()

    def ask_in_a_loop() -> None:
        while not stop.is_set():
            try:
                index = load_partition(data, "header", minilm.key)
                top = retrieve(index, query, QUESTION).hits[0].row
                answers.append((index.generation, len(index), index.contents[top]))
                with duckdb.connect(str(data / "rag.duckdb"), read_only=True) as con:
                    con.execute("select count(*) from chunks").fetchone()
            except Exception as exc:  # noqa: BLE001 - every failure is what the test counts
                errors.append(f"{type(exc).__name__}: {exc}")

    reader = threading.Thread(target=ask_in_a_loop)
    reader.start()
    try:
        # The corpus changes: the timeout paragraph is rewritten, a new document appears.
        (tiny_corpus / "guide" / "config.md").write_text(
            "# Configuring Frobnicator\n\nThe configuration file lives in the home folder and is "
            "written in TOML.\n\n## Timeouts\n\nEvery network call gives up after nine seconds "
            "unless the timeout key says otherwise.\n", encoding="utf-8")
        (tiny_corpus / "guide" / "proxy.md").write_text(
            "# Proxies\n\nSet the proxy key to route every call through a proxy server.\n",
            encoding="utf-8")
        for moment in ("before_embedding", "mid_embedding", "before_publish"):
            result = _index_process(data, tiny_corpus, moment)
            assert result.returncode == -9, result.stderr[-2000:]
            # Killed: the previous generation is still the one served, and still loads.
            assert current_generation(warehouse, "header", minilm.key) == old
            assert load_partition(data, "header", minilm.key).generation == old.id
            if moment == "mid_embedding":
                # The first embeddings run (blind) checkpointed its new vectors, then died.
                assert len(VectorCache(warehouse, minilm).shard_files()) == 1
            if moment == "before_publish":
                # blind's vectors were written (and its checkpoint dropped); not published.
                assert warehouse.version("embeddings", {"chunker": "blind",
                                                        "model": minilm.key}).rows == 4
                assert VectorCache(warehouse, minilm).shard_files() == []
        finished = run_index(defs, dg.DagsterInstance.ephemeral(), echo=lambda _: None,
                             evaluate=False)
    finally:
        stop.set()
        reader.join(timeout=60)

    new = current_generation(warehouse, "header", minilm.key)
    assert new.id != old.id and new.rows["chunks"] == old.rows["chunks"] + 1
    metadata = {t.partition.split("|")[0]: t.metadata for t in finished if "|" in t.partition}
    # Finished work is reused: blind's vectors were all computed before the kills (first into a
    # checkpoint, then into its partition), so the finishing run embeds nothing for it; header's
    # two new texts (the rewritten paragraph, the new document) are embedded once.
    assert (metadata["blind"]["embeddings.embedded"], metadata["blind"]["embeddings.reused"]) == (0, 4)
    assert (metadata["header"]["embeddings.embedded"], metadata["header"]["embeddings.reused"]) == (2, 4)
    assert VectorCache(warehouse, minilm).shard_files() == []
    assert errors == []
    generations = {g for g, _, _ in answers}
    assert generations <= {old.id, new.id} and old.id in generations
    rows = {old.id: old.rows["chunks"], new.id: new.rows["chunks"]}
    # Every answer came whole from one generation: its row count is that generation's, and its
    # best passage is that generation's wording of the timeout rule.
    for generation, n_rows, content in answers:
        assert n_rows == rows[generation]
        assert ("seventeen" in content) == (generation == old.id)
    final = load_partition(data, "header", minilm.key)
    assert final.generation == new.id
    assert "nine seconds" in final.contents[retrieve(final, query, QUESTION).hits[0].row]
