"""A thread-safe map that keeps its most recently used entries: the one home of every bounded
cache of the service and the index (page images, sanitised markup, access masks, recent
answers)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["Recent"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Recent(Generic[K, V]):
    """At most ``size`` entries; reading or writing one makes it the newest, and a write past
    ``size`` drops the oldest. Values are never None (:meth:`get`'s "not kept")."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a cache keeps at least one entry, not {size}")
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value kept for ``key``, now the newest; None when none is kept."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> None:
        """Keeps ``value`` for ``key`` as the newest entry, dropping the oldest past ``size``."""
        if value is None:
            raise ValueError("a cache keeps no None: get could not tell it from a miss")
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries
