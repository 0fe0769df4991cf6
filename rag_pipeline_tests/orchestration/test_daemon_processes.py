"""``orchestration.daemon_processes`` with a real process that looks like a daemon: a heartbeat
is trusted only beside a live daemon process of the same home."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag_pipeline.orchestration.daemon_processes import daemon_pids

FAKE_DAEMON = "import time; time.sleep(600)"


@pytest.mark.parametrize("same_home", [True, False])
def test_a_daemon_counts_only_while_its_process_lives_on_this_home(tmp_path: Path, same_home):
    home, other = tmp_path / "home", tmp_path / "other"
    home.mkdir()
    other.mkdir()
    # A process that looks like `dagster-daemon run` to the process table, with its home.
    script = tmp_path / "bin" / "dagster-daemon"
    script.parent.mkdir()
    script.write_text(FAKE_DAEMON)
    daemon = subprocess.Popen([sys.executable, str(script), "run"],
                              env={**os.environ, "DAGSTER_HOME": str(home if same_home else other)})
    try:
        deadline = time.monotonic() + 10
        while same_home and not daemon_pids(home):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert daemon_pids(home) == ([daemon.pid] if same_home else [])
    finally:
        daemon.kill()
        daemon.wait()
    # Its process is gone: no daemon of the home is found.
    assert daemon_pids(home) == []
