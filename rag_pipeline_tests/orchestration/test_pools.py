"""The concurrency pools get their limits before any run is queued: Dagster's queue gives a pool
its default only in the pass that first meets it, and lets that pass's runs through unheld."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.orchestration.pools import DOCUMENTS_POOL, MODEL_POOL, ensure_pool_limits
from rag_pipeline.project_paths import DAGSTER_HOME


def _limits(instance: dg.DagsterInstance) -> dict[str, int]:
    return {limit.name: limit.limit for limit in instance.event_log_storage.get_pool_limits()}


def test_the_pools_get_the_default_limit_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    shutil.copy(DAGSTER_HOME / "dagster.yaml", tmp_path / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with dg.DagsterInstance.get() as instance:
        assert _limits(instance) == {}
        assert ensure_pool_limits(instance) == [MODEL_POOL, DOCUMENTS_POOL]
        assert _limits(instance) == {MODEL_POOL: 1, DOCUMENTS_POOL: 1}
        # A limit an operator set (`dagster instance concurrency set model 3`) is kept.
        instance.event_log_storage.set_concurrency_slots(MODEL_POOL, 3)
        assert ensure_pool_limits(instance) == []
        assert _limits(instance) == {MODEL_POOL: 3, DOCUMENTS_POOL: 1}


def test_an_instance_without_a_default_limit_is_left_alone(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch):
    # As deploy/dagster.yaml: no `concurrency: pools:`, so its pools stay unlimited until set.
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with dg.DagsterInstance.get() as instance:
        assert ensure_pool_limits(instance) == []
        assert _limits(instance) == {}
