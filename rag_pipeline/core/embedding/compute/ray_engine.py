"""Shards of texts embedded as Ray tasks on a cluster's workers.

Each shard (:func:`rag_pipeline.core.embedding.compute.shards.shards`, by content hash) is one
task asking for one CPU; a worker process loads the model once (:func:`load_embedder` keeps it
for the tasks after) and returns the shard's vectors, which the driver puts back at their
texts' positions, so order and ids are those of the in-process path. A worker killed mid-shard
is a system failure Ray retries (``max_retries``); a shard's result is placed once, by its
positions, so a retried shard neither doubles nor loses a row. A cluster that does not answer,
or goes away mid-run, fails the run with one line naming the address
(:class:`~rag_pipeline.core.embedding.compute.ComputeUnreachableError`) before anything is
written.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from rag_pipeline.core.embedding.bulk import BulkPath
from rag_pipeline.core.embedding.compute import ComputeSettings, ComputeUnreachableError
from rag_pipeline.core.embedding.compute.shards import shards
from rag_pipeline.core.embedding.models import ModelSpec

__all__ = ["RayEmbedder", "embed_shard"]

SHARD_RETRIES = 3
"""How often Ray runs a shard again after its worker died."""
WAIT_SECONDS = 5.0
"""How long the driver waits for a shard before checking that the cluster's head still answers
(well inside the minute after which Ray ends a driver that lost its head)."""


def embed_shard(spec: ModelSpec, texts: list[str], wordpieces: list[int] | None,
                ) -> tuple[str, int, str, np.ndarray]:
    """One shard on a worker: (node id, worker pid, the worker's bulk path, vectors). The model
    loads on the worker's first shard and stays loaded for the next."""
    import ray

    from rag_pipeline.core.embedding.embedder import load_embedder

    embedder = load_embedder(spec)
    vectors = embedder.embed(texts, wordpieces=wordpieces)
    return (ray.get_runtime_context().get_node_id(), os.getpid(), embedder.bulk_path.backend,
            vectors)


_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
"""An HTTP/2 client's opening and an empty SETTINGS frame: a gRPC server (Ray's GCS, its Ray
Client server) answers with a SETTINGS frame of its own (RFC 9113, 3.4)."""


def signal_raised(error: SystemError) -> BaseException | None:
    """What a signal handler raised inside Ray's compiled code, when ``error`` is Cython's
    "returned a result with an exception set" around it: a SIGTERM while the driver waits for
    shards raises Dagster's interrupt in ``CoreWorker.wait``'s signal check, and it comes out as
    a ``SystemError`` caused by the interrupt (a ``BaseException`` that is no ``Exception``).
    None for any other ``SystemError``."""
    cause = error.__cause__ or error.__context__
    return cause if cause is not None and not isinstance(cause, Exception) else None


def _reachable(address: str, seconds: float) -> None:
    """Raises unless ``HOST:PORT`` (or a Ray Client ``ray://HOST:PORT``) accepts a connection
    and speaks gRPC there, as Ray does, within ``seconds``: ``ray.init`` on a port some other
    program holds (the dashboard's 8265) retries without end. With ``RAY_USE_TLS`` set, the
    connection alone is checked."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ComputeUnreachableError(f"[compute] address must be HOST:PORT or auto, got {address!r}")
    try:
        with socket.create_connection((host, int(port)), timeout=seconds) as connection:
            if os.environ.get("RAY_USE_TLS", "0") in ("", "0"):
                connection.sendall(_HTTP2_PREFACE)
                answer = _received(connection, 9, seconds)
                if len(answer) < 9 or answer[3] != 0x04:
                    raise ComputeUnreachableError(
                        f"Ray cluster at {address} does not answer as Ray does (no gRPC at that "
                        "port: give the head's GCS port, 6379 unless `ray start --port` said "
                        "otherwise, or ray://HOST:10001); the served index is untouched")
    except OSError as exc:
        raise ComputeUnreachableError(
            f"Ray cluster at {address} is unreachable ({exc.strerror or exc}); the served index "
            "is untouched") from None


def _received(connection: socket.socket, size: int, seconds: float) -> bytes:
    """Up to ``size`` bytes, as many as come within ``seconds`` in all (fewer when the peer
    closes, stays silent or trickles: one deadline, not one a byte)."""
    import time

    deadline = time.monotonic() + seconds
    data = b""
    try:
        while len(data) < size and (left := deadline - time.monotonic()) > 0:
            connection.settimeout(left)
            chunk = connection.recv(size - len(data))
            if not chunk:
                break
            data += chunk
    except TimeoutError:
        pass
    return data


def _connect(ray, address: str) -> None:
    """Connects this process to the cluster as its driver, keeping the process's own SIGTERM
    handler when Python set it: on the main thread ``ray.init`` puts in one of Ray's that
    exits the process, which would take the place of Dagster's (a SIGTERM a run should end as
    an interrupt) and the project's (:func:`~rag_pipeline.core.runtime.processes.
    recorded_signals`). A handler set outside Python cannot be put back from it."""
    on_main = threading.current_thread() is threading.main_thread()
    terminate = signal.getsignal(signal.SIGTERM) if on_main else None
    try:
        ray.init(address=address, log_to_driver=False, logging_level="ERROR",
                 include_dashboard=False)
    except (ConnectionError, RuntimeError) as exc:
        raise ComputeUnreachableError(
            f"Ray cluster at {address} is unreachable ({str(exc).splitlines()[0]}); the served "
            "index is untouched") from None
    finally:
        if terminate is not None:
            signal.signal(signal.SIGTERM, terminate)


class RayEmbedder:
    """A :class:`~rag_pipeline.core.embedding.models.TextEmbedder` whose texts are embedded on
    the Ray cluster at ``settings.address``, shard by shard.

    Attributes:
        nodes: Shards embedded per node id over this embedder's life.
        workers: Worker pids that embedded shards (each loaded the model once).
        backends: The bulk paths the workers embedded with (:attr:`bulk_path`).
    """

    def __init__(self, spec: ModelSpec, settings: ComputeSettings) -> None:
        if not settings.address:
            raise ComputeUnreachableError('[compute] engine = "ray" needs an address '
                                          '("HOST:PORT" or "auto")')
        import ray

        self.spec = spec
        self.settings = settings
        self.address = settings.address
        self.nodes: Counter[str] = Counter()
        self.workers: set[int] = set()
        self.backends: set[str] = set()
        if self.address != "auto":
            _reachable(self.address, settings.connect_seconds)
        if not ray.is_initialized():
            _connect(ray, self.address)
        # SPREAD: under the default strategy data locality comes first, and every shard reads
        # ``spec_ref`` from the node holding the driver's objects (once, all shards ran there).
        self._task = ray.remote(num_cpus=1, max_retries=SHARD_RETRIES,
                                scheduling_strategy="SPREAD")(embed_shard)

    def embed(self, texts: Sequence[str], *, batch_size: int | None = None,
              progress: Callable[[int, int], None] | None = None,
              wordpieces: Sequence[int] | None = None) -> np.ndarray:
        """Unit-length float32 vectors in input order, computed shard by shard on the cluster.

        Raises:
            ComputeUnreachableError: the cluster went away before every shard came back.
        """
        import ray

        texts = list(texts)
        out = np.zeros((len(texts), self.spec.dimension), dtype=np.float32)
        if not texts:
            return out
        if wordpieces is not None and len(wordpieces) != len(texts):
            raise ValueError(f"{len(wordpieces)} word-piece counts for {len(texts)} texts")
        spec_ref = ray.put(self.spec)
        pending = {}
        for group in shards(texts, self.settings.shard_texts):
            counts = [int(wordpieces[i]) for i in group] if wordpieces is not None else None
            pending[self._task.remote(spec_ref, [texts[i] for i in group], counts)] = group
        filled = np.zeros(len(texts), dtype=bool)
        done = 0
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=WAIT_SECONDS)
                if not ready:
                    self._check_alive()
                    continue
                for ref in ready:
                    group = pending.pop(ref)
                    node, pid, backend, vectors = ray.get(ref)
                    if filled[group].any():
                        raise RuntimeError(f"a shard of {len(group)} texts came back twice")
                    out[group] = vectors
                    filled[group] = True
                    self.nodes[node] += 1
                    self.workers.add(pid)
                    self.backends.add(backend)
                    done += len(group)
                    if progress is not None:
                        progress(done, len(texts))
        except ray.exceptions.WorkerCrashedError as exc:
            # Ray gave the shard up after its retries: the cluster may be well and the
            # workers dying (out of memory, a signal), or the cluster gone.
            self._check_alive()
            raise ComputeUnreachableError(
                f"a shard's worker on the Ray cluster at {self.address} died {SHARD_RETRIES + 1} "
                f"times ({type(exc).__name__}: out of memory, or killed?); the served index is "
                "untouched, the next run tries again") from None
        except (ray.exceptions.RaySystemError, ray.exceptions.NodeDiedError,
                ray.exceptions.ObjectLostError, ray.exceptions.LocalRayletDiedError,
                ConnectionError) as exc:
            raise self._gone(exc) from None
        except SystemError as exc:
            if (interrupt := signal_raised(exc)) is not None:
                raise interrupt from None
            raise
        if not filled.all():
            raise RuntimeError(f"{int((~filled).sum())} texts came back without a vector")
        return out

    @property
    def texts_at_once(self) -> int:
        """How many texts the cluster embeds at once: a shard for each of its CPUs (read now, as
        a cluster may grow or shrink). An embeddings run's checkpoint groups hold several times
        this many (:func:`~rag_pipeline.core.index.builders.checkpoint_group_texts`), so every
        worker has shards."""
        import ray

        try:
            cpus = ray.cluster_resources().get("CPU", 1)
        except Exception as exc:  # the GCS itself is gone: every call raises
            raise self._gone(exc) from None
        return max(1, int(cpus)) * self.settings.shard_texts

    @property
    def bulk_path(self) -> BulkPath | None:
        """What the workers embedded with (as each worker's
        :attr:`~rag_pipeline.core.embedding.embedder.Embedder.bulk_path` says; several joined by
        ", "), None before a shard came back."""
        return BulkPath(", ".join(sorted(self.backends))) if self.backends else None

    def _check_alive(self) -> None:
        import ray

        if self.address != "auto":
            try:
                _reachable(self.address, self.settings.connect_seconds)
            except ComputeUnreachableError:
                raise ComputeUnreachableError(
                    f"Ray cluster at {self.address} went away mid-run (its head no longer "
                    "answers); the served index is untouched") from None
        try:
            alive = [n for n in ray.nodes() if n.get("Alive")]
        except Exception as exc:  # the GCS itself is gone: every call raises
            raise self._gone(exc) from None
        if not alive:
            raise ComputeUnreachableError(f"Ray cluster at {self.address} has no live node; the "
                                          "served index is untouched")

    def _gone(self, exc: BaseException) -> ComputeUnreachableError:
        """The one line for a cluster whose calls raise ``exc`` mid-run."""
        return ComputeUnreachableError(
            f"Ray cluster at {self.address} went away mid-run ({type(exc).__name__}); the "
            "served index is untouched")

    def embed_query(self, question: str) -> np.ndarray:
        return self.embed([question])[0]
