"""Tests for ``rag_pipeline.core.runtime.recent``: the bounded cache's order and limits."""

from __future__ import annotations

import threading

import pytest

from rag_pipeline.core.runtime.recent import Recent


def test_a_write_past_the_size_drops_the_least_recently_used():
    kept: Recent[str, int] = Recent(2)
    kept.put("a", 1)
    kept.put("b", 2)
    assert kept.get("a") == 1  # "a" is now newer than "b"
    kept.put("c", 3)
    assert (kept.get("a"), kept.get("b"), kept.get("c"), len(kept)) == (1, None, 3, 2)


def test_writing_a_kept_key_again_replaces_its_value_and_makes_it_newest():
    kept: Recent[str, int] = Recent(2)
    kept.put("a", 1)
    kept.put("b", 2)
    kept.put("a", 10)
    kept.put("c", 3)
    assert ("a" in kept, "b" in kept, "c" in kept, kept.get("a")) == (True, False, True, 10)


def test_a_miss_is_none_and_none_is_never_kept():
    kept: Recent[str, int] = Recent(1)
    assert kept.get("absent") is None
    with pytest.raises(ValueError, match="keeps no None"):
        kept.put("a", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one entry, not 0"):
        Recent(0)


def test_writers_on_many_threads_never_exceed_the_size():
    kept: Recent[object, int] = Recent(50)

    def write(thread: int) -> None:
        for i in range(2_000):
            kept.put((thread, i), i)
            kept.get((thread, i - 1))

    threads = [threading.Thread(target=write, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(kept) == 50
    kept.put("last", 1)
    assert (len(kept), kept.get("last")) == (50, 1)
