"""``rag-pipeline index`` in a real process on a project of its own."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest

from rag_pipeline.core.config.init_file import reference_config
from rag_pipeline.project_paths import ENV_DATA_DIR, PROJECT_ROOT
from rag_pipeline_tests.conftest import DagsterProject

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-c", "from rag_pipeline.cli import main; main()"]


def test_a_data_folder_whose_path_holds_glob_query_and_control_characters_indexes(
        dagster_project: Callable[[str, str], DagsterProject]):
    # "?" made DuckDB write rag.duckdb's WAL under ".../g [1]*.wal?#%..." (it reads "?" as the
    # start of a query string) and the documents job failed; "[", "*" are glob characters,
    # "#", "%" URL ones, and the newline a character a Linux folder name may hold.
    project = dagster_project("odd-path", reference_config(["header"]))
    data = project.root / "g [1]*?#% x\nnext"
    env = {**project.env, ENV_DATA_DIR: str(data)}
    index = subprocess.run([*CLI, "index", "--no-eval"], cwd=PROJECT_ROOT, env=env,
                           capture_output=True, text=True, timeout=1200)
    assert index.returncode == 0, index.stdout[-3000:] + index.stderr[-3000:]
    ask = subprocess.run([*CLI, "ask", "--json", "How long does a network call wait?"],
                         cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert ask.returncode == 0, ask.stdout[-3000:] + ask.stderr[-3000:]
    assert '"guide/config.md' in ask.stdout
    assert sorted(p.name for p in project.root.iterdir()) == [
        "corpus", "dagster_home", "eval", "g [1]*?#% x\nnext", "rag_pipeline.lock.json",
        "rag_pipeline.toml"]
