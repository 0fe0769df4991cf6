"""Tests for ``rag_pipeline.core.retrieval.sentences``: splitting, and best-sentence distances against a
brute-force minimum over seeded random unit vectors."""

from __future__ import annotations

import numpy as np
import pytest

from rag_pipeline.core.retrieval.sentences import (
    SentenceIndex,
    best_sentence_distances,
    chunk_headers,
    partition_sentences,
    split_sentences,
)


def test_split_sentences_joins_short_pieces():
    content = ("The current code generator emits no code. For example, x = 1.\n\n   x = 1\n\n"
               "If the class name consists only of underscores, nothing is done. Ok.")
    # "x = 1" (5 characters) joins the sentence before it; "Ok." the one before it.
    assert split_sentences(content) == [
        "The current code generator emits no code.",
        "For example, x = 1. x = 1",
        "If the class name consists only of underscores, nothing is done. Ok.",
    ]
    assert split_sentences("tiny") == ["tiny"]
    assert split_sentences("") == []


def test_chunk_headers():
    assert chunk_headers(["[Doc > S]\nbody", "body two", "other"], ["body", "body two", "x"]) == [
        "[Doc > S]\n", "", ""]


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_best_sentence_distances_is_the_minimum_per_chunk():
    rng = np.random.default_rng(7)
    vectors = unit(rng.normal(size=(9, 16)))
    rows = np.array([0, 0, 1, 1, 1, 3, 3, 3, 3])  # chunk 2 has no sentence
    index = SentenceIndex("m@1", rows, vectors, n_rows=4)
    query = unit(rng.normal(size=(1, 16)))[0]
    best = best_sentence_distances(index, query)
    brute = [min((1.0 - float(vectors[i] @ query) for i in range(9) if rows[i] == r), default=2.0)
             for r in range(4)]
    assert best.tolist() == pytest.approx(brute, abs=1e-6)
    assert best[2] == 2.0


def test_partition_sentences_embeds_header_plus_sentence_and_caches(tmp_path):
    seen: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        seen.append(texts)
        return unit(np.arange(1, 1 + 2 * len(texts), dtype=np.float64).reshape(len(texts), 2))

    texts = ["[D > S]\nFirst sentence is here. Second sentence is here.", "Lone chunk text here."]
    contents = ["First sentence is here. Second sentence is here.", "Lone chunk text here."]
    built = partition_sentences("m@1", texts, contents, embed, tmp_path)
    assert seen == [["[D > S]\nFirst sentence is here.", "[D > S]\nSecond sentence is here.",
                     "Lone chunk text here."]]
    assert built.rows.tolist() == [0, 0, 1]
    again = partition_sentences("m@1", texts, contents, embed, tmp_path)
    assert len(seen) == 1  # read from the cache, nothing embedded
    assert again.rows.tolist() == [0, 0, 1]
    assert np.array_equal(again.vectors, built.vectors)
