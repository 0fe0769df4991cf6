"""Texts split into shards by content hash: the same texts give the same shards on every run,
whatever their order, so a re-run (or a retried task) embeds exactly the same groups."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

__all__ = ["shard_count", "shard_of", "shards"]


def shard_count(texts: int, shard_texts: int) -> int:
    """How many shards ``texts`` texts make at about ``shard_texts`` each (at least one)."""
    if shard_texts < 1:
        raise ValueError(f"shard_texts must be at least 1, got {shard_texts}")
    return max(1, math.ceil(texts / shard_texts))


def shard_of(text: str, count: int) -> int:
    """The shard of a text: the first 8 bytes of its UTF-8 sha256, modulo ``count``."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count


def shards(texts: Sequence[str], shard_texts: int) -> list[list[int]]:
    """Positions of ``texts`` grouped by shard (shards in number order, positions ascending);
    empty shards are left out."""
    count = shard_count(len(texts), shard_texts)
    groups: list[list[int]] = [[] for _ in range(count)]
    for position, text in enumerate(texts):
        groups[shard_of(text, count)].append(position)
    return [group for group in groups if group]
