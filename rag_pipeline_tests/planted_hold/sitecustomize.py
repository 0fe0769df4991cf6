"""A planted step that waits for a release: put this folder first on ``PYTHONPATH`` of the
processes a test starts (the command, the daemon, its run workers) and set
``RAG_TEST_HOLD_DIR``. While ``<dir>/armed`` exists, an embeddings step that has computed its
vectors writes ``<dir>/held-<pid>`` and waits (at most ten minutes) until ``<dir>/release``
exists, before it checkpoints them. A test then signals or kills at a known point of the step,
instead of hoping the step is still running."""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
import time
from pathlib import Path

TARGET = "rag_pipeline.core.embedding.vector_cache"
HOLD_SECONDS = 600.0


def _hold(cache_class: type) -> None:
    folder = Path(os.environ["RAG_TEST_HOLD_DIR"])
    original = cache_class.checkpoint

    def checkpoint(self, shas, vectors):
        if (folder / "armed").exists():
            (folder / f"held-{os.getpid()}").write_text("", encoding="utf-8")
            deadline = time.monotonic() + HOLD_SECONDS
            while not (folder / "release").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return original(self, shas, vectors)

    cache_class.checkpoint = checkpoint


class _PatchOnImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _hold(module.VectorCache)

        spec.loader.exec_module = exec_module
        return spec


if os.environ.get("RAG_TEST_HOLD_DIR"):
    sys.meta_path.insert(0, _PatchOnImport())
