"""The served index: one loaded partition that follows re-indexing, swapped between requests.

A request reads :attr:`IndexFollower.current` once and answers wholly from that object: one
published generation, one vector space. A background thread reads the partition's
``CURRENT.json`` (:mod:`rag_pipeline.core.index.generations`); when another generation is published,
it is loaded completely in that thread and then published to requests with a single reference
assignment, so no request ever sees a half-loaded or mixed index, and none waits for a load.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rag_pipeline.core.index.generations import Generation, generation_age_seconds
from rag_pipeline.core.index.mapped import mapped_columns
from rag_pipeline.core.index.row_reads import KeyedStrings
from rag_pipeline.core.index.store import PartitionIndex, load_partition, served_generation
from rag_pipeline.core.storage.table_names import DOCUMENTS
from rag_pipeline.core.storage.warehouse import Warehouse

log = logging.getLogger(__name__)

LOAD_ATTEMPTS = 3


@dataclass(frozen=True)
class ServedIndex:
    """One loaded generation of a partition and the documents' canonical texts it cites."""

    index: PartitionIndex
    canonical: Mapping[str, str]
    """``document_id -> canonical_text`` of every ok document, for the document view (mapped:
    :class:`rag_pipeline.core.index.mapped.KeyedStrings`)."""
    loaded_at: float
    """Wall-clock time (epoch seconds) at which this generation was swapped in."""
    load_seconds: float

    @property
    def generation(self) -> str:
        return self.index.generation

    def age_seconds(self, now: float | None = None) -> float:
        """Seconds since the generation was published."""
        return generation_age_seconds(self.index.published_at, now)


def _canonical_texts(warehouse: Warehouse, generation: Generation) -> KeyedStrings:
    """``document_id -> canonical_text`` of every ok document, from the documents file's mapped
    copy (a text becomes a Python string only when its document is viewed)."""
    mapped = mapped_columns(warehouse, generation.files[DOCUMENTS],
                            ["document_id", "canonical_text", "status"])
    table = mapped.table
    rows = {document: row for row, (document, status) in enumerate(zip(
        table.column("document_id").to_pylist(), table.column("status").to_pylist(), strict=True))
        if status == "ok"}
    return KeyedStrings(rows, mapped.strings("canonical_text"))


class IndexFollower:
    """Keeps the newest complete generation of one partition loaded.

    Args:
        warehouse: The tables to serve (their local data folder and where they live).
        chunker: The partition's chunker.
        model_key: The partition's model key (``name@fingerprint``).
        poll_seconds: How often the background thread looks for a new generation.
    """

    def __init__(self, warehouse: Warehouse, chunker: str, model_key: str,
                 poll_seconds: float = 1.0) -> None:
        self.warehouse = warehouse
        self.chunker = chunker
        self.model_key = model_key
        self.poll_seconds = poll_seconds
        self.swaps = 0
        self.last_error: str | None = None
        self._current: ServedIndex | None = None
        self._refresh_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def data_dir(self) -> Path:
        """The local data folder of the served tables."""
        return self.warehouse.data_dir

    @property
    def current(self) -> ServedIndex:
        """The generation to answer the next request from (read it once per request)."""
        current = self._current
        if current is None:
            raise RuntimeError("no generation loaded yet: call start() first")
        return current

    def refresh(self) -> bool:
        """Loads and swaps in the published generation if it is not the served one; True when
        it swapped. Loading errors propagate; the served generation then stays in place."""
        with self._refresh_lock:
            warehouse = self.warehouse
            generation = served_generation(warehouse, self.chunker, self.model_key)
            if self._current is not None and self._current.generation == generation.id:
                return False
            started = time.perf_counter()
            for _ in range(LOAD_ATTEMPTS):
                index = load_partition(warehouse, self.chunker, self.model_key)
                if index.generation == generation.id:
                    break
                # Another generation was published between the two reads of CURRENT.json.
                generation = served_generation(warehouse, self.chunker, self.model_key)
            else:
                raise RuntimeError(f"partition {self.chunker} x {self.model_key} was republished "
                                   f"{LOAD_ATTEMPTS} times while loading")
            served = ServedIndex(index, _canonical_texts(warehouse, generation), time.time(),
                                 time.perf_counter() - started)
            if self._current is not None:
                self.swaps += 1
            self._current = served
            self.last_error = None
        log.info("serving generation %s of %s x %s (%d chunks, loaded in %.2f s)", served.generation,
                 self.chunker, self.model_key, len(index), served.load_seconds)
        return True

    def start(self) -> ServedIndex:
        """Loads the published generation (errors propagate: nothing to serve), then follows it."""
        self.refresh()
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
