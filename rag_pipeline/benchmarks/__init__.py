"""Benchmarks that print figures (not timed tests): run with ``python -m``.

Every benchmark runs offline: :func:`go_offline` sets :data:`OFFLINE` for its own process (in
``main``, keeping what the caller set), :func:`offline_env` gives the environment of a child
process it starts. A server a benchmark started is ended with
:func:`rag_pipeline.core.runtime.processes.stop_process`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

OFFLINE = {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
"""No model hub, and no tokenizer thread pool forked into children."""


def go_offline() -> None:
    """Sets :data:`OFFLINE` in this process's environment where the caller set nothing."""
    for name, value in OFFLINE.items():
        os.environ.setdefault(name, value)


def offline_env(base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """A child process's environment: ``base`` (this process's by default) with :data:`OFFLINE`
    and ``extra`` set."""
    return {**(os.environ if base is None else base), **OFFLINE, **extra}
