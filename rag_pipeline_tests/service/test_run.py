"""``serve``'s client limits follow the process's open-file limit; its heap is frozen after
start-up, with the garbage collected first; a fatal signal leaves a line in its log; its socket
takes connections before its record names it."""

from __future__ import annotations

import gc
import os
import resource
import signal
import subprocess
import sys
import weakref
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from rag_pipeline.core.config.access import AccessPolicy, AccessRule, access_report
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.service.auth import AccessState
from rag_pipeline.service.protocol import ClientLimits
from rag_pipeline.service.query_service import ServeSettings
from rag_pipeline.service.run import (
    access_line,
    client_limits,
    freeze_heap,
    listening_socket,
    running_service,
)
from rag_pipeline.service.tokens import TokenStore
from rag_pipeline_tests.core.index_builder import build_index
from rag_pipeline_tests.fake_embedder import HashedEmbedder


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


MAP_THEN_TRUNCATE = """
import mmap, sys
from rag_pipeline.service.run import report_fatal_signals
if sys.argv[2] == "reported":
    report_fatal_signals()
with open(sys.argv[1], "r+b") as handle:
    mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    handle.truncate(0)
    print(mapped[3 * mmap.PAGESIZE], flush=True)  # line 9
"""


def test_a_mapped_file_cut_short_writes_a_line_before_the_process_dies(tmp_path: Path):
    copy = tmp_path / "copy.npy"
    results = {}
    for mode in ("silent", "reported"):
        copy.write_bytes(b"x" * (8 * 4096))
        # Planted: the mapped copy truncated under the process, as an operator's `: > file`
        # does; reading a page past the new end is SIGBUS.
        results[mode] = subprocess.run([sys.executable, "-c", MAP_THEN_TRUNCATE, str(copy), mode],
                                       capture_output=True, text=True, timeout=120)
    assert [r.returncode for r in results.values()] == [-signal.SIGBUS, -signal.SIGBUS]
    assert results["silent"].stderr == ""
    assert results["reported"].stderr.startswith("Fatal Python error: Bus error\n")
    assert 'File "<string>", line 9 in <module>' in results["reported"].stderr


def test_serve_counts_the_documents_readable_by_nobody_as_status_does(
        tmp_path: Path, hashed_embedder: HashedEmbedder):
    """A failed document no rule matches holds nothing to read: ``serve`` said 1 where
    ``status`` said 0 (found by a user)."""
    built = build_index(tmp_path, hashed_embedder, {
        "public/faq.md": "# FAQ\n\nThe cafeteria opens at noon.\n",
        "board/minutes.md": "# Minutes\n\nThe acquisition closes in March.\n",
        "empty.txt": ""})
    policy = AccessPolicy((AccessRule("public/**", ("staff",)),))
    access = AccessState(policy, TokenStore(built.data_dir), poll_seconds=3600)
    with running_service(Warehouse(built.data_dir), ServeSettings("header", hashed_embedder.spec.key),
                         lambda: hashed_embedder, poll_seconds=3600, access=access) as service:
        line = access_line(service)
    assert line.endswith("needs a principal; 1 document(s) readable by nobody")
    assert sorted(built.index.corpus_ids) == ["board/minutes.md", "empty.txt", "public/faq.md"]
    assert access_report(policy, built.index.documents, built.index.corpus_ids).unreadable == [
        "board/minutes.md"]


def test_the_start_line_counts_expired_tokens_apart():
    """Found by an operator's trial: an expired token was counted with those in force."""
    from types import SimpleNamespace

    from rag_pipeline.service.run import _tokens_in_force

    def record(expired: bool):
        return SimpleNamespace(expired=lambda: expired)

    assert _tokens_in_force([record(False), record(True), record(False)]) == (
        "2 token(s) (1 more expired)")
    assert _tokens_in_force([record(False)]) == "1 token(s)"
    assert _tokens_in_force([]) == "0 token(s)"


def test_the_socket_serve_records_takes_connections_before_uvicorn_starts():
    # Found in CI: serve writes its record before uvicorn runs; a bound socket that did not
    # listen yet refused the connection of a client that read the record (ask, or a test).
    import socket

    with closing(listening_socket("127.0.0.1", 0)) as sock, \
            closing(socket.create_connection(sock.getsockname(), timeout=5)) as client:
        accepted, address = sock.accept()
        accepted.close()
        assert address == client.getsockname()


def test_serve_on_a_data_folder_it_cannot_write_says_so_and_serves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Found by an operator's trial: on a read-only data folder ``serve`` loaded the index,
    then ended with "[Errno 30] Read-only file system" writing serve.json, though the guide
    says it works there (as root a mode stops no write: the failure is planted)."""
    from rag_pipeline.core.runtime.serve_record import ServeRecord, read_serve_record
    from rag_pipeline.service import run

    def read_only(data_dir: Path, record: ServeRecord) -> Path:
        raise OSError(30, "Read-only file system")

    said: list[str] = []
    record = ServeRecord("127.0.0.1", 8000, os.getpid(), "header", "m@0000abcd")
    monkeypatch.setattr(run, "write_serve_record", read_only)
    assert run.record_service(tmp_path, record, said.append) is False
    assert said == [f"warning: cannot write serve.json in {tmp_path} (Read-only file system): "
                    "`ask` on this data folder answers in its own process, not through this service"]
    monkeypatch.undo()
    assert run.record_service(tmp_path, record, said.append) is True
    assert read_serve_record(tmp_path) == record and len(said) == 1
    # Found by a daily user: a second serve of the folder took `ask`'s questions silently.
    second = ServeRecord("127.0.0.1", 8001, os.getppid(), "header", "m@0000abcd")
    assert run.record_service(tmp_path, second, said.append, earlier=record) is True
    assert said[1:] == [f"note: another serve runs on this data folder (pid {os.getpid()}, "
                        "http://127.0.0.1:8000/): `ask` sends its questions to this one until it "
                        "stops, then to that one again"]
