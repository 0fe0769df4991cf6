"""How many threads torch runs a model on in this process, set without importing torch.

torch is imported only where a model really loads (the embedder, the adaptation's training, the
re-ranker); a run that loads none (a Dagster run with the hashed test embedder, a run that only
chunks) never pays for the import. :func:`set_torch_threads` is called at the start of a run
(Dagster's ``RunCompute`` resource): it applies the count at once when torch is loaded already,
and otherwise keeps it for :func:`apply_torch_threads`, which each place that imports torch for a
model calls right after the import.
"""

from __future__ import annotations

import sys

__all__ = ["apply_torch_threads", "pending_torch_threads", "set_torch_threads"]

_pending: int | None = None


def set_torch_threads(threads: int) -> bool:
    """Makes torch use ``threads`` intra-op threads in this process; True when applied now
    (torch was loaded), False when kept for the first model to load.

    Raises:
        ValueError: ``threads`` is below 1.
    """
    global _pending
    if threads < 1:
        raise ValueError(f"torch threads must be at least 1, not {threads}")
    _pending = threads
    if "torch" in sys.modules:
        apply_torch_threads()
        return True
    return False


def pending_torch_threads() -> int | None:
    """The count :func:`set_torch_threads` kept and no loaded torch has taken yet."""
    return _pending


def apply_torch_threads() -> None:
    """Gives torch the kept count, if any (call right after importing torch for a model)."""
    global _pending
    if _pending is None:
        return
    import torch

    torch.set_num_threads(_pending)
    _pending = None
