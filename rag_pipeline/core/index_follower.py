"""The served index: one loaded partition that follows re-indexing, swapped between requests.

A request reads :attr:`IndexFollower.current` once and answers wholly from that object: one
generation, one vector space. A background thread polls the partition's generation; when it
changes, the new partition is loaded completely in that thread and published with a single
reference assignment, so no request ever sees a half-loaded or mixed index, and none waits for
a load. Until published generations exist, a generation is named by the partition files'
modification times, and a load is published only when those did not move while it ran (an
``index`` run in progress rewrites them table by table).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rag_pipeline.core.index_store import PartitionIndex, load_partition, partition_signature
from rag_pipeline.core.warehouse import Warehouse

log = logging.getLogger(__name__)

GENERATION_CHARS = 12


def generation_id(signature: tuple) -> str:
    """A short stable name for a partition's files as they are: sha256 of their signature."""
    return hashlib.sha256(repr(signature).encode("utf-8")).hexdigest()[:GENERATION_CHARS]


@dataclass(frozen=True)
class ServedIndex:
    """One loaded generation of a partition and the documents' canonical texts it cites."""

    index: PartitionIndex
    generation: str
    signature: tuple
    canonical: dict[str, str]
    """``document_id -> canonical_text`` of every ok document, for the document view."""
    loaded_at: float
    """Wall-clock time (epoch seconds) at which this generation was published."""
    load_seconds: float

    @property
    def published_at(self) -> float | None:
        """Epoch seconds of the newest partition file: when the index was last written."""
        stamps = [s for s in self.signature if s is not None]
        return max(stamps) / 1e9 if stamps else None


def _canonical_texts(data_dir: Path) -> dict[str, str]:
    table = Warehouse(data_dir).read("documents", columns=["document_id", "canonical_text", "status"])
    return {d: t for d, t, s in zip(table.column("document_id").to_pylist(),
                                    table.column("canonical_text").to_pylist(),
                                    table.column("status").to_pylist(), strict=True) if s == "ok"}


class IndexFollower:
    """Keeps the newest complete generation of one partition loaded.

    Args:
        data_dir: The project's data folder.
        chunker: The partition's chunker.
        model_key: The partition's model key (``name@fingerprint``).
        poll_seconds: How often the background thread looks for a new generation.
        on_swap: Called with the new :class:`ServedIndex` after each publication.
    """

    def __init__(self, data_dir: Path, chunker: str, model_key: str, poll_seconds: float = 1.0,
                 on_swap: Callable[[ServedIndex], None] | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.chunker = chunker
        self.model_key = model_key
        self.poll_seconds = poll_seconds
        self.on_swap = on_swap
        self.swaps = 0
        self.last_error: str | None = None
        self._current: ServedIndex | None = None
        self._refresh_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def loaded(self) -> bool:
        return self._current is not None

    @property
    def current(self) -> ServedIndex:
        """The generation to answer the next request from (read it once per request)."""
        current = self._current
        if current is None:
            raise RuntimeError("no generation loaded yet: call start() first")
        return current

    def refresh(self) -> bool:
        """Loads and publishes the partition if its generation changed; True when it swapped.

        Raises whatever loading raises (an index being rewritten may be incomplete); the
        generation being served stays in place.
        """
        with self._refresh_lock:
            signature = partition_signature(self.data_dir, self.chunker, self.model_key)
            if self._current is not None and self._current.signature == signature:
                return False
            started = time.perf_counter()
            index = load_partition(self.data_dir, self.chunker, self.model_key)
            canonical = _canonical_texts(self.data_dir)
            if partition_signature(self.data_dir, self.chunker, self.model_key) != signature:
                log.info("partition %s x %s changed while loading; retrying at the next poll",
                         self.chunker, self.model_key)
                return False
            served = ServedIndex(index, generation_id(signature), signature, canonical, time.time(),
                                 time.perf_counter() - started)
            if self._current is not None:
                self.swaps += 1
            self._current = served
            self.last_error = None
        log.info("serving generation %s of %s x %s (%d chunks, loaded in %.2f s)", served.generation,
                 self.chunker, self.model_key, len(index), served.load_seconds)
        if self.on_swap is not None:
            self.on_swap(served)
        return True

    def start(self) -> ServedIndex:
        """Loads the current generation (errors propagate: nothing to serve), then follows it."""
        for _ in range(20):
            if self.refresh() or self._current is not None:
                break
            time.sleep(0.25)
        else:
            raise RuntimeError(f"partition {self.chunker} x {self.model_key} kept changing while "
                               "loading: is an index run writing it?")
        self._thread = threading.Thread(target=self._follow, name="index-follower", daemon=True)
        self._thread.start()
        return self.current

    def _follow(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            try:
                self.refresh()
            except Exception as exc:  # noqa: BLE001 - reported in /status and the log; the
                # served generation stays, and the next poll tries again.
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("keeping generation %s: %s", self.current.generation, self.last_error)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(5.0, 2 * self.poll_seconds))
