"""The Dagster daemons of one Dagster home, found in this machine's process table: a heartbeat
in the instance is trusted only while one of them lives."""

from __future__ import annotations

import os
from pathlib import Path

from rag_pipeline.core.runtime.processes import pid_alive, process_environment, process_ids

__all__ = ["daemon_pids"]


def daemon_pids(home: Path) -> list[int]:
    """The live ``dagster-daemon run`` processes of this machine whose ``DAGSTER_HOME`` is
    ``home`` (relative to their working folder), sorted."""
    found = []
    for pid in process_ids():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        names = [os.path.basename(os.fsdecode(a)) for a in argv if a]
        # `dagster-daemon run`, or `python -m dagster._daemon run` as `dagster dev` starts it.
        is_daemon = ("dagster-daemon" in names[:2] or "dagster._daemon" in names[:3]) \
            and "run" in names
        if is_daemon and pid_alive(pid) and _same_home(pid, home):
            found.append(pid)
    return sorted(found)


def _same_home(pid: int, home: Path) -> bool:
    found = process_environment(pid)
    if found is None or "DAGSTER_HOME" not in found[0]:
        return False
    environ, cwd = found
    return (cwd / environ["DAGSTER_HOME"]).resolve() == home.resolve()
