"""Tests for ``rag_pipeline.core.runtime.serve_record``: a record is removed by the process that
wrote it, and the record of another live ``serve`` it replaced is put back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rag_pipeline.core.runtime.serve_record import (
    ServeRecord,
    read_serve_record,
    remove_serve_record,
    write_serve_record,
)


def _record(pid: int, port: int) -> ServeRecord:
    return ServeRecord("127.0.0.1", port, pid, "header", "m@00000000", None, "/data", "s" * 64)


def test_stopping_a_second_serve_puts_the_first_ones_record_back(tmp_path: Path):
    # Found by an attacker: stopping a second serve of the folder left the first unfound.
    first = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        earlier = _record(first.pid, 8001)
        write_serve_record(tmp_path, earlier)
        replaced = read_serve_record(tmp_path)
        write_serve_record(tmp_path, _record(os.getpid(), 8002))
        remove_serve_record(tmp_path, os.getpid(), replaced)
        assert read_serve_record(tmp_path) == earlier
        assert (tmp_path / "serve.json").stat().st_mode & 0o777 == 0o600
        # The first stops too: its record goes, with nothing to put back.
        remove_serve_record(tmp_path, first.pid)
        assert not (tmp_path / "serve.json").exists()
    finally:
        first.kill()
        first.wait()


def test_a_replaced_record_whose_serve_is_gone_is_not_put_back(tmp_path: Path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    write_serve_record(tmp_path, _record(os.getpid(), 8002))
    remove_serve_record(tmp_path, os.getpid(), _record(gone.pid, 8001))
    assert not (tmp_path / "serve.json").exists()


def test_a_record_another_process_wrote_since_is_left_alone(tmp_path: Path):
    later = _record(os.getpid(), 8003)
    write_serve_record(tmp_path, later)
    remove_serve_record(tmp_path, os.getpid() + 1_000_000)
    assert read_serve_record(tmp_path) == later
