"""Tests for ``rag_pipeline.dagster_dev`` (``make dev``): started as a background job whose
SIGINT is ignored, ``dagster dev`` and every process it started stop on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from rag_pipeline.project_paths import PROJECT_ROOT

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serving(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


def _processes_naming(path: Path) -> list[int]:
    """The live processes whose command line names ``path`` (a Dagster instance's folder is
    in each of its processes' ``--instance-ref``)."""
    named = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(path).encode() in (entry / "cmdline").read_bytes():
                if (entry / "stat").read_text().rpartition(")")[2].split()[0] not in "ZX":
                    named.append(int(entry.name))
        except OSError:
            continue
    return named


def test_dagster_dev_started_with_sigint_ignored_stops_on_sigterm(tmp_path: Path):
    """Found by a user of the UI: ``make dev &`` in a script ran on after ``kill`` (SIGTERM)
    until killed: Dagster handles SIGTERM as SIGINT, which such a job inherits ignored. A
    SIGTERM to ``dagster dev`` alone left its code servers up for their heartbeat's 45 s."""
    port = _free_port()
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    dev = subprocess.Popen(
        [sys.executable, "-m", "rag_pipeline.dagster_dev", "-w", "workspace.yaml", "-h", "127.0.0.1",
         "-p", str(port)], cwd=PROJECT_ROOT, env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        deadline = time.monotonic() + 120
        while not _serving(port):
            assert dev.poll() is None and time.monotonic() < deadline, "dagster dev did not serve"
            time.sleep(1)
        assert len(_processes_naming(tmp_path)) >= 3  # webserver, daemon, code server
        # A new home got the project's dagster.yaml before Dagster started on it (found by a
        # new operator: `DAGSTER_HOME=~/dh make dev` ran 10 model runs at once, no pool).
        assert (tmp_path / "dagster.yaml").read_bytes() == (PROJECT_ROOT / "dagster_home" /
                                                            "dagster.yaml").read_bytes()
        dev.send_signal(signal.SIGTERM)
        assert dev.wait(timeout=60) == 0
        assert not _serving(port)
        deadline = time.monotonic() + 20
        while _processes_naming(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _processes_naming(tmp_path) == []
    finally:
        if dev.poll() is None:
            os.killpg(dev.pid, signal.SIGKILL)
            dev.wait()
        for pid in _processes_naming(tmp_path):
            os.kill(pid, signal.SIGKILL)
