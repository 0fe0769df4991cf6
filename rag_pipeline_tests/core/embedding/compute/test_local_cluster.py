"""Tests for ``rag_pipeline.core.embedding.compute.local_cluster``: ports free below the kernel's
ephemeral range, and a head that exits before answering started again on other ports."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from rag_pipeline.core.embedding.compute import local_cluster as module


def test_free_ports_are_distinct_bindable_and_below_the_ephemeral_range():
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = module._free_ports(6)
    assert len(set(ports)) == 6 and all(20000 <= p < max(low, 20060) for p in ports)
    for port in ports:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", port))


@pytest.mark.slow
def test_a_head_that_exits_before_answering_is_started_again(monkeypatch: pytest.MonkeyPatch):
    # Found in a CI-like run: the head's port (drawn in the ephemeral range) was taken, its GCS
    # failed to bind, and the cluster fixture failed three Ray tests after waiting.
    import ray

    started: list[list[str]] = []
    real = module._ray_start

    def first_head_dies(args: list[str], env, log: Path) -> subprocess.Popen:
        started.append(args)
        if len(started) == 1:
            return subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])
        return real(args, env, log)

    monkeypatch.setattr(module, "_ray_start", first_head_dies)
    with module.local_cluster(1) as cluster:
        assert ray.is_initialized() is False
        assert [args[0] for args in started] == ["--head", "--head"]
        assert cluster.address == f"127.0.0.1:{started[1][started[1].index('--port') + 1]}"
        assert len(cluster.processes) == 1 and cluster.processes[0].poll() is None
