"""Shards by content hash: the same texts give the same shards whatever their order."""

from __future__ import annotations

import hashlib

import pytest

from rag_pipeline.core.embedding.compute.shards import shard_count, shard_of, shards


def test_a_shard_is_the_sha256_prefix_modulo_the_count():
    digest = hashlib.sha256(b"alpha").digest()
    assert shard_of("alpha", 7) == int.from_bytes(digest[:8], "big") % 7
    assert shard_of("alpha", 1) == 0


def test_shards_do_not_depend_on_the_order_of_the_texts():
    texts = [f"text number {i}" for i in range(10)]
    by_text = [sorted(texts[i] for i in group) for group in shards(texts, 3)]
    reversed_texts = texts[::-1]
    again = [sorted(reversed_texts[i] for i in group) for group in shards(reversed_texts, 3)]
    assert by_text == again
    assert shard_count(10, 3) == 4
    assert sorted(i for group in shards(texts, 3) for i in group) == list(range(10))
    assert all(group == sorted(group) for group in shards(texts, 3))


def test_a_shard_size_below_one_is_refused():
    with pytest.raises(ValueError, match="^shard_texts must be at least 1, got 0$"):
        shard_count(5, 0)
