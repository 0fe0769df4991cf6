"""Tests for ``rag_pipeline.orchestration.index_worker``: the models loaded ahead of the runs."""

from __future__ import annotations

import threading
import time

from rag_pipeline.core.config.keys import declared_models
from rag_pipeline.core.embedding import embedder
from rag_pipeline.orchestration import index_worker


def test_a_model_loading_ahead_is_loaded_and_said_once(monkeypatch, capsys):
    spec = declared_models()[0]
    loads = []
    loading = threading.Event()

    def slow_load(asked):
        loads.append(asked)
        loading.set()
        time.sleep(0.3)

    monkeypatch.setattr(index_worker, "_LOADED_AHEAD", set(), raising=False)
    monkeypatch.setattr(embedder, "is_loaded", lambda asked: False)
    monkeypatch.setattr(embedder, "load_embedder", slow_load)
    first = threading.Thread(target=index_worker.load_models, args=([spec],))
    first.start()
    assert loading.wait(5)
    began = time.monotonic()
    index_worker.load_models([spec])  # a second chunks run's thread, while the first loads
    waited = time.monotonic() - began
    first.join()
    lines = capsys.readouterr().out.splitlines()
    assert loads == [spec]
    assert waited < 0.2
    assert len(lines) == 1 and lines[0].startswith(f"rag-pipeline index: loaded {spec.key} for ")
