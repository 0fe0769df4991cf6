"""What every benchmark shares (``rag_pipeline.benchmarks``): its offline environment."""

from __future__ import annotations

import os

from rag_pipeline.benchmarks import go_offline, offline_env


def test_a_childs_environment_is_offline_whatever_the_parent_set():
    assert offline_env({"PATH": "/bin", "HF_HUB_OFFLINE": "0"}, DAGSTER_HOME="/tmp/home") == {
        "PATH": "/bin", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
        "DAGSTER_HOME": "/tmp/home"}


def test_going_offline_keeps_what_the_caller_set(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")
    go_offline()
    assert (os.environ["HF_HUB_OFFLINE"], os.environ["TOKENIZERS_PARALLELISM"]) == ("1", "true")
