"""The Ray engine on a real two-node cluster on loopback: the vectors of the in-process path,
chunk for chunk, shards on both nodes, a worker killed mid-shard retried without a row doubled
or lost, an unreachable cluster refused in one line naming its address, and the driver's own
SIGTERM handler kept."""

from __future__ import annotations

import http.server
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from rag_pipeline.core.embedding.compute import (
    ComputeSettings,
    ComputeUnreachableError,
    Engine,
    embedder_for,
)
from rag_pipeline.core.embedding.compute.local_cluster import LocalCluster, local_cluster
from rag_pipeline.core.embedding.models import ModelSpec, calibration_set

WORKTREE = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """Two one-CPU nodes whose workers import this checkout's rag_pipeline."""
    import ray

    env = {**os.environ, "PYTHONPATH": str(WORKTREE), "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    with local_cluster(2, env) as running:
        yield running
        ray.shutdown()


@pytest.fixture(scope="module")
def texts(minilm: ModelSpec) -> list[str]:
    return calibration_set().texts()[:48]


@pytest.mark.slow
def test_ray_gives_the_in_process_vectors_with_shards_on_both_nodes(cluster, minilm, texts):
    from rag_pipeline.core.embedding.embedder import load_embedder

    local = load_embedder(minilm)
    counts = local.wordpieces(texts)
    expected = local.embed(texts, wordpieces=counts)
    remote = embedder_for(ComputeSettings(Engine.RAY, cluster.address, shard_texts=8), minilm)
    got = remote.embed(texts, wordpieces=counts)
    assert got.shape == expected.shape == (48, 384)
    assert float(np.abs(got - expected).max()) <= 1e-6
    assert len(remote.nodes) == 2 and sum(remote.nodes.values()) == 6
    # Two one-CPU nodes, a shard of 8 each at once: an embeddings run's groups hold 8 x 16
    # texts, raised to the least of 256.
    assert remote.texts_at_once == 16
    # A worker loads the model once: 6 shards ran on at most 2 worker processes per node.
    assert 2 <= len(remote.workers) <= 4


def _running_shard_pid(cluster: LocalCluster) -> int | None:
    import psutil

    groups = {p.pid for p in cluster.processes}
    for process in psutil.process_iter(["pid", "cmdline"]):
        cmdline = process.info["cmdline"] or []
        if cmdline and cmdline[0].startswith("ray::embed_shard"):
            try:  # a worker leads a process group of its own; its raylet is in the node's
                if any(os.getpgid(parent.pid) in groups for parent in process.parents()):
                    return process.info["pid"]
            except (ProcessLookupError, psutil.NoSuchProcess):
                continue
    return None


@pytest.mark.slow
def test_a_worker_killed_mid_shard_is_retried_without_a_row_doubled_or_lost(cluster, minilm):
    from rag_pipeline.core.embedding.embedder import load_embedder

    many = calibration_set().texts()[:160]  # 4 shards of about 40: seconds each, long to kill in
    expected = load_embedder(minilm).embed(many)
    remote = embedder_for(ComputeSettings(Engine.RAY, cluster.address, shard_texts=40), minilm)
    result: dict[str, np.ndarray] = {}
    worker = threading.Thread(target=lambda: result.update(vectors=remote.embed(many)))
    worker.start()
    killed = None
    deadline = time.monotonic() + 300
    while killed is None and worker.is_alive() and time.monotonic() < deadline:
        killed = _running_shard_pid(cluster)  # observed: a worker titled ray::embed_shard
        if killed is None:
            time.sleep(0.05)
    assert killed is not None, "no shard was seen running"
    os.kill(killed, signal.SIGKILL)
    worker.join(600)
    assert not worker.is_alive()
    assert result["vectors"].shape == (160, 384)
    assert float(np.abs(result["vectors"] - expected).max()) <= 1e-6
    assert sum(remote.nodes.values()) == 4  # each shard placed once, the killed one retried


@pytest.mark.slow
def test_a_driver_keeps_its_own_sigterm_handler(cluster, minilm):
    import ray

    ray.shutdown()  # this process connects afresh, as a run's process does

    def own(signum: int, frame: object) -> None:
        raise AssertionError("not signalled here")

    before = signal.signal(signal.SIGTERM, own)
    try:
        embedder_for(ComputeSettings(Engine.RAY, cluster.address, shard_texts=8), minilm)
        assert ray.is_initialized()
        assert signal.getsignal(signal.SIGTERM) is own
    finally:
        signal.signal(signal.SIGTERM, before if before is not None else signal.SIG_DFL)


def test_an_unreachable_cluster_fails_in_one_line_naming_its_address(minilm):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(ComputeUnreachableError,
                       match=rf"^Ray cluster at 127\.0\.0\.1:{port} is unreachable \(Connection "
                             r"refused\); the served index is untouched$"):
        embedder_for(ComputeSettings(Engine.RAY, f"127.0.0.1:{port}"), minilm)


def test_a_port_that_is_not_ray_fails_in_one_line_within_the_connect_time(minilm):
    # Found by a checker: the dashboard's port (any program's) made ray.init retry without end;
    # the run hung for 400 s and more.
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    silent = socket.socket()
    trickle = socket.socket()

    def trickling() -> None:
        # A SETTINGS frame a byte every 0.4 s: one deadline for the whole answer, not one a
        # byte (found by an attack: held 9 times connect_seconds, then accepted).
        connection, _ = trickle.accept()
        with connection:
            for byte in b"\x00\x00\x00\x04\x00\x00\x00\x00\x00":
                time.sleep(0.4)
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return

    try:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        trickle.bind(("127.0.0.1", 0))
        trickle.listen()
        threading.Thread(target=trickling, daemon=True).start()
        for port, seconds in ((server.server_address[1], 10.0), (silent.getsockname()[1], 1.0),
                              (trickle.getsockname()[1], 1.0)):
            started = time.monotonic()
            with pytest.raises(ComputeUnreachableError,
                               match=rf"^Ray cluster at 127\.0\.0\.1:{port} does not answer as Ray does "
                                     r"\(no gRPC at that port: give the head's GCS port, 6379 unless "
                                     r"`ray start --port` said otherwise, or ray://HOST:10001\); the "
                                     r"served index is untouched$"):
                embedder_for(ComputeSettings(Engine.RAY, f"127.0.0.1:{port}", connect_seconds=seconds),
                             minilm)
            assert time.monotonic() - started < seconds + 5
    finally:
        server.shutdown()
        silent.close()
        trickle.close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def _dies(spec: ModelSpec, texts: list[str], wordpieces: list[int] | None) -> None:
    os._exit(1)


@pytest.mark.slow
def test_a_shard_whose_workers_keep_dying_is_said_so_with_the_cluster_alive(cluster, minilm):
    # Found by a checker: a shard given up after its retries (every worker killed) was reported
    # as "went away mid-run" while both nodes were alive.
    import re

    import ray

    from rag_pipeline.core.embedding.compute.ray_engine import SHARD_RETRIES

    remote = embedder_for(ComputeSettings(Engine.RAY, cluster.address, shard_texts=8), minilm)
    remote._task = ray.remote(num_cpus=1, max_retries=SHARD_RETRIES)(_dies)
    with pytest.raises(ComputeUnreachableError,
                       match=rf"^a shard's worker on the Ray cluster at {re.escape(cluster.address)} "
                             rf"died {SHARD_RETRIES + 1} times \(WorkerCrashedError: out of memory, or "
                             r"killed\?\); the served index is untouched, the next run tries again$"):
        remote.embed(["one text the workers never embed"])
    assert all(node["Alive"] for node in ray.nodes() if node["NodeManagerAddress"])


def _header_embeddings(root: Path, spec: ModelSpec, compute: ComputeSettings | None):
    """The tiny corpus's documents, ``header`` chunks and their embeddings partition, built
    through the project's jobs; returns the embeddings table and its materialisation metadata."""
    import dagster as dg

    from rag_pipeline.core.storage.warehouse import Warehouse
    from rag_pipeline.definitions import build_definitions
    from rag_pipeline.orchestration.automation import CHUNKS_JOB, DOCUMENTS_JOB, EMBEDDINGS_JOB
    from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus

    defs = build_definitions(data_dir=root / "data", corpus_dir=write_corpus(root / "corpus", TINY_DOCS),
                             models=[spec], compute=compute)
    instance = dg.DagsterInstance.ephemeral()
    key = dg.MultiPartitionKey({"chunker": "header", "model": spec.key})
    metadata = {}
    for job, partition in ((DOCUMENTS_JOB, None), (CHUNKS_JOB, "header"), (EMBEDDINGS_JOB, key)):
        result = defs.resolve_job_def(job).execute_in_process(
            instance=instance, partition_key=partition, raise_on_error=False)
        assert result.success, job
        for event in result.get_asset_materialization_events():
            metadata.update({k: getattr(v, "value", v) for k, v in
                             event.event_specific_data.materialization.metadata.items()})
    table = Warehouse(root / "data").read("embeddings", {"chunker": "header", "model": spec.key})
    return table, metadata


@pytest.mark.slow
def test_an_embeddings_run_on_ray_stores_the_in_process_rows(cluster, minilm, tmp_path):
    local, local_meta = _header_embeddings(tmp_path / "local", minilm, None)
    remote, remote_meta = _header_embeddings(
        tmp_path / "ray", minilm, ComputeSettings(Engine.RAY, cluster.address, shard_texts=2))
    assert (local_meta["engine"], remote_meta["engine"]) == ("in_process", "ray")
    assert remote_meta["ray_nodes"] == 2  # shards embedded on both nodes
    # What the workers embedded with, as the in-process run says it (not the declared backend):
    # the runtime recorded as the faster on this machine, read by every worker.
    assert remote_meta["bulk_path"] == local_meta["bulk_path"] == f"{_recorded_runtime(minilm)}-fp32"
    assert remote.column("chunk_id").to_pylist() == local.column("chunk_id").to_pylist()
    assert remote.column("text_sha256").to_pylist() == local.column("text_sha256").to_pylist()
    assert remote_meta["embedded"] == local_meta["embedded"] == local.num_rows
    difference = np.abs(np.asarray(remote.column("vector").to_pylist(), np.float32)
                        - np.asarray(local.column("vector").to_pylist(), np.float32)).max()
    assert float(difference) <= 1e-6


def _recorded_runtime(spec) -> str:
    """The runtime recorded for this process's machine and threads (workers of other thread
    counts record their own beside it)."""
    from rag_pipeline.core.embedding.bulk import machine, read_bulk_records
    from rag_pipeline.core.embedding.embedder import load_embedder
    from rag_pipeline.core.embedding.export import onnx_dir

    here = machine(load_embedder(spec).bulk_path.threads)
    return next(r.runtime for r in read_bulk_records(onnx_dir(spec)) if r.machine == here)


def test_an_interrupt_raised_inside_rays_compiled_code_is_raised_as_itself():
    """Found by an attack: a SIGTERM while the driver waited for shards failed the run 3 times
    in 16 with "SystemError: <cyfunction CoreWorker.wait> returned a result with an exception
    set" instead of ending it as Dagster's interrupt, which its handler had raised."""
    from rag_pipeline.core.embedding.compute.ray_engine import signal_raised

    class Interrupted(BaseException):  # as Dagster's DagsterExecutionInterruptedError
        pass

    def wrapped(cause: BaseException) -> SystemError:
        try:
            try:
                raise cause
            except BaseException as exc:
                raise SystemError("<cyfunction CoreWorker.wait> returned a result with an "
                                  "exception set") from exc
        except SystemError as error:
            return error

    interrupt = Interrupted()
    assert signal_raised(wrapped(interrupt)) is interrupt
    assert signal_raised(wrapped(ValueError("a bug"))) is None
    assert signal_raised(SystemError("no cause")) is None
