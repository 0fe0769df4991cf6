"""A Ray cluster of one-CPU nodes on this machine's loopback, for the tests and the sizing
benchmark: a head and ``nodes - 1`` workers, each ``ray start --block`` in a session of its own,
stopped by process group (never by ``ray stop``, which stops every Ray process of the machine,
another user's included)."""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rag_pipeline.core.runtime.processes import stop_process

__all__ = ["LocalCluster", "local_cluster"]


@dataclass(frozen=True)
class LocalCluster:
    """A running cluster: the head's ``address`` (``127.0.0.1:PORT``) and the ``ray start``
    processes (head first)."""

    address: str
    processes: tuple[subprocess.Popen, ...]
    temp_dir: Path


def _ray_start(args: list[str], env: Mapping[str, str], log: Path) -> subprocess.Popen:
    ray = Path(sys.executable).with_name("ray")
    with log.open("ab") as out:
        return subprocess.Popen([str(ray), "start", "--block", "--disable-usage-stats", *args],
                                env=dict(env), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _stop(processes: list[subprocess.Popen]) -> None:
    """Each node's ``ray start`` and its group (SIGTERM, SIGKILL after 20 s), then any process
    it started that is still there (a worker leads a process group of its own), by pid."""
    import psutil

    started = []
    for process in processes:
        try:
            started += psutil.Process(process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            continue
    for process in reversed(processes):
        stop_process(process, timeout=20, group=True)
        try:  # a node's children outlive a leader that has already ended
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    _, alive = psutil.wait_procs(started, timeout=10)
    for child in alive:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            continue


HEAD_ATTEMPTS = 3
"""A head whose port another process took meanwhile is started again on other ports."""


def _free_ports(count: int) -> list[int]:
    """``count`` distinct ports free on loopback now, from 20000 up to the kernel's ephemeral
    range (whose ports any outgoing connection may take: a head's port drawn there was taken
    once) and above Ray's default worker ports (10002-19999)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    found: list[int] = []
    for port in random.sample(range(20000, max(low, 20000 + 10 * count)), 10 * count):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        found.append(port)
        if len(found) == count:
            return found
    raise RuntimeError(f"no {count} free ports on 127.0.0.1 between 20000 and {low}")


def _answers(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=1).close()
    except OSError:
        return False
    return True


@contextmanager
def local_cluster(nodes: int, env: Mapping[str, str] | None = None,
                  ready_seconds: float = 180.0) -> Iterator[LocalCluster]:
    """``nodes`` one-CPU Ray nodes on random ports, ready (every node alive) when entered,
    stopped on exit (bounded: SIGTERM, then SIGKILL after 20 s per node)."""
    import ray

    env = dict(env if env is not None else os.environ)
    temp_dir = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))  # socket paths must be short
    processes: list[subprocess.Popen] = []
    try:
        deadline = time.monotonic() + ready_seconds
        for attempt in range(1, HEAD_ATTEMPTS + 1):
            port, *ports = _free_ports(3 + nodes)
            head = _ray_start(
                ["--head", "--num-cpus", "1", "--node-ip-address", "127.0.0.1", "--port",
                 str(port), "--temp-dir", str(temp_dir), "--include-dashboard=false",
                 "--dashboard-port", str(ports[0]), "--dashboard-agent-listen-port",
                 str(ports[1]), "--ray-client-server-port", str(ports[2])],
                env, temp_dir / "head.log")
            processes.append(head)
            address = f"127.0.0.1:{port}"
            while not _answers("127.0.0.1", port) and head.poll() is None:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the Ray head at {address} did not answer in "
                                       f"{ready_seconds:.0f} s (logs in {temp_dir})")
                time.sleep(0.2)
            if head.poll() is None:
                break
            _stop([processes.pop()])
            if attempt == HEAD_ATTEMPTS:
                raise RuntimeError(f"the Ray head exited {HEAD_ATTEMPTS} times before answering "
                                   f"(last at {address}; logs in {temp_dir})")
        for number in range(1, nodes):
            processes.append(_ray_start(
                ["--address", address, "--num-cpus", "1", "--node-ip-address", "127.0.0.1",
                 "--dashboard-agent-listen-port", str(ports[2 + number])],
                env, temp_dir / f"node-{number}.log"))
        ray.init(address=address, log_to_driver=False, logging_level="ERROR",
                 include_dashboard=False)
        try:
            while sum(1 for n in ray.nodes() if n.get("Alive")) < nodes:
                if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                    raise RuntimeError(f"the {nodes}-node Ray cluster at {address} did not come "
                                       f"up in {ready_seconds:.0f} s (logs in {temp_dir})")
                time.sleep(0.5)
        finally:
            ray.shutdown()
        yield LocalCluster(address, tuple(processes), temp_dir)
    finally:
        if ray.is_initialized():
            ray.shutdown()
        _stop(processes)
        if sys.exc_info()[0] is None:  # a failed start keeps its logs for the message
            shutil.rmtree(temp_dir, ignore_errors=True)
