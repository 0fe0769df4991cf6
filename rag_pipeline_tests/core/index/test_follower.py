"""Tests for ``rag_pipeline.core.index.follower``: a newly published generation is loaded beside
the served one and swapped in whole; unpublished tables and a broken generation never replace
the served one."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

import pytest

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.embedding.wordpieces import wordpiece_counter
from rag_pipeline.core.index.builders import chunks_table
from rag_pipeline.core.index.follower import IndexFollower
from rag_pipeline.core.index.generations import CURRENT, current_generation, generation_dir
from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.storage.table_names import CHUNKS, EMBEDDINGS
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline_tests.conftest import write_corpus
from rag_pipeline_tests.core.index_builder import DUPLICATED_DOCS, build_index
from rag_pipeline_tests.fake_embedder import HashedEmbedder

ADDED = {**DUPLICATED_DOCS, "new.md": "# New page\n\nA page added after the first build.\n"}


def test_start_serves_the_published_generation_and_an_unchanged_one_is_not_reloaded(
        tmp_path: Path, hashed_embedder: HashedEmbedder):
    built = build_index(tmp_path, hashed_embedder)
    follower = IndexFollower(Warehouse(built.data_dir), "header", hashed_embedder.spec.key, poll_seconds=3600)
    served = follower.start()
    try:
        published = current_generation(Warehouse(built.data_dir), "header", hashed_embedder.spec.key)
        assert (served.generation, len(served.index)) == (published.id, 6)
        assert served.canonical == built.canonical
        assert 0 <= served.age_seconds() < 600
        assert follower.refresh() is False
        assert follower.current is served
        assert (follower.swaps, follower.last_error) == (0, None)
    finally:
        follower.stop()


def test_a_new_generation_is_swapped_in_whole(tmp_path: Path, hashed_embedder: HashedEmbedder):
    build_index(tmp_path, hashed_embedder)
    follower = IndexFollower(Warehouse(tmp_path / "data"), "header", hashed_embedder.spec.key,
                             poll_seconds=3600)
    first = follower.start()
    try:
        build_index(tmp_path, hashed_embedder, ADDED)
        assert follower.refresh() is True
        second = follower.current
        assert second.generation != first.generation
        assert (len(first.index), len(second.index)) == (6, 7)
        assert "new.md" in second.canonical and "new.md" not in first.canonical
        assert "new.md" in second.index.documents and "new.md" not in first.index.documents
        assert follower.swaps == 1
    finally:
        follower.stop()


def test_the_background_thread_follows_and_keeps_the_served_generation_on_errors(
        tmp_path: Path, hashed_embedder: HashedEmbedder):
    build_index(tmp_path, hashed_embedder)
    data_dir = tmp_path / "data"
    follower = IndexFollower(Warehouse(data_dir), "header", hashed_embedder.spec.key, poll_seconds=0.05)
    first = follower.start()
    try:
        # Tables of a changed corpus written but not published (an index run between its
        # chunks and embeddings steps): nothing changes for readers.
        corpus = write_corpus(tmp_path / "changed", ADDED)
        chunks, _ = chunks_table(extract_corpus(corpus).records, ChunkingStrategy.HEADER,
                                 wordpiece_counter(hashed_embedder.spec))
        Warehouse(data_dir).write(CHUNKS, chunks, {"chunker": "header"})
        # A poll made now (what the following thread does every 0.05 s) finds nothing to swap.
        assert follower.refresh() is False
        assert (follower.current, follower.swaps, follower.last_error) == (first, 0, None)
        # Planted flaw: a published generation naming an embeddings file that does not exist.
        # Loading fails on every poll; the error is reported and the old generation answers.
        warehouse = Warehouse(data_dir)
        manifest = asdict(current_generation(warehouse, "header", hashed_embedder.spec.key))
        manifest["id"] = "20990101T000000Z-deadbeef"
        manifest["files"][EMBEDDINGS] = manifest["files"][EMBEDDINGS].replace("part-", "part-missing-")
        warehouse.put_json(f"{generation_dir('header', hashed_embedder.spec.key)}/{CURRENT}", manifest)
        deadline = time.monotonic() + 10
        while follower.last_error is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert follower.last_error is not None and follower.last_error.startswith("FileNotFoundError: ")
        assert follower.current is first
    finally:
        follower.stop()
    assert not follower._thread.is_alive()


@pytest.mark.parametrize("poll_seconds", [0.05])
def test_stop_ends_the_thread(tmp_path: Path, hashed_embedder: HashedEmbedder, poll_seconds: float):
    build_index(tmp_path, hashed_embedder)
    follower = IndexFollower(Warehouse(tmp_path / "data"), "header", hashed_embedder.spec.key,
                             poll_seconds=poll_seconds)
    follower.start()
    follower.stop()
    assert not follower._thread.is_alive()
