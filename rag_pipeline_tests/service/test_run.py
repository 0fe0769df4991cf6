"""``serve``'s client limits follow the process's open-file limit."""

from __future__ import annotations

import resource
from collections.abc import Iterator

import pytest

from rag_pipeline.service.protocol import ClientLimits
from rag_pipeline.service.run import client_limits


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
