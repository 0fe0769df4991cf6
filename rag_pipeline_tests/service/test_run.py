"""``serve``'s client limits follow the process's open-file limit; its heap is frozen after
start-up, with the garbage collected first."""

from __future__ import annotations

import gc
import resource
import weakref
from collections.abc import Iterator

import pytest

from rag_pipeline.service.protocol import ClientLimits
from rag_pipeline.service.run import client_limits, freeze_heap


@pytest.fixture
def file_limit() -> Iterator[tuple[int, int]]:
    """The open-file limit, restored after the test lowers it."""
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        yield before
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, before)


def test_the_connection_limit_is_half_the_open_file_limit_below_2048(file_limit):
    # Planted: a soft limit of 600 open files; 1,024 connections would make accepting fail
    # (EMFILE) before the limit answered 503.
    resource.setrlimit(resource.RLIMIT_NOFILE, (600, file_limit[1]))
    assert client_limits() == ClientLimits(head_seconds=5.0, max_head_bytes=16 * 1024, per_client=64,
                                           max_connections=300, max_requests=256)


def test_the_connection_limit_is_1024_with_room_for_files(file_limit):
    if file_limit[1] != resource.RLIM_INFINITY and file_limit[1] < 4096:
        pytest.skip(f"the hard open-file limit is {file_limit[1]}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, file_limit[1]))
    assert client_limits().max_connections == 1024


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_freeze_heap_collects_garbage_then_freezes_what_is_alive():
    kept = Node()
    # Planted: a garbage cycle; frozen instead of collected, it would never be freed.
    cycle_a, cycle_b = Node(), Node()
    cycle_a.other, cycle_b.other = cycle_b, cycle_a
    garbage = weakref.ref(cycle_a)
    del cycle_a, cycle_b
    try:
        freeze_heap()
        assert garbage() is None
        assert gc.get_freeze_count() > 0
        assert not any(o is kept for o in gc.get_objects())  # out of every generation
    finally:
        gc.unfreeze()
    assert any(o is kept for o in gc.get_objects())  # it was frozen, not lost
