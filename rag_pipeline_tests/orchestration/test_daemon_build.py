"""index and a running daemon agree when their builds do: the daemon's build is resolved from
its own environment, not this shell's."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.orchestration.daemon_build import build_differences, daemon_build
from rag_pipeline.orchestration.daemon_processes import daemon_pids
from rag_pipeline.project_paths import resolve_context
from rag_pipeline_tests.test_project_paths import FOLDER_CONFIG


def _project(root: Path) -> Path:
    model = root / "model"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "model.safetensors").write_bytes(b"weights")
    (model / "1_Pooling" / "config.json").write_text('{"word_embedding_dimension": 8}')
    (root / "docs").mkdir()
    (root / "rag_pipeline.toml").write_text(FOLDER_CONFIG)
    return root / "rag_pipeline.toml"


def test_the_same_build_has_no_difference_and_each_difference_is_named(tmp_path: Path):
    config = _project(tmp_path)
    build = resolve_context({}, config_file=config)
    assert build_differences(build, resolve_context({"RAG_PIPELINE_CONFIG": str(config)})) == []
    other = replace(build, warehouse=Warehouse(tmp_path / "elsewhere"),
                    chunkers=(ChunkingStrategy.HEADER, ChunkingStrategy.BOUNDARIES))
    assert build_differences(build, other) == [
        f"data folder {tmp_path / 'docs.rag-data'} (the daemon's: {tmp_path / 'elsewhere'})",
        f"tables {tmp_path / 'docs.rag-data' / 'warehouse'} (the daemon's: "
        f"{tmp_path / 'elsewhere' / 'warehouse'})",
        "chunkers header (the daemon's: header, boundaries)"]


def test_the_daemons_build_comes_from_its_own_environment(tmp_path: Path):
    # A process that looks like `dagster-daemon run` on this home, started with
    # RAG_PIPELINE_CONFIG (as `RAG_PIPELINE_CONFIG=FILE make dev` starts it); this shell has none.
    config = _project(tmp_path / "project")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(home), "RAG_PIPELINE_CONFIG": str(config)}
    env.pop("RAG_PIPELINE_DATA_DIR", None)
    fake = subprocess.Popen(["bash", "-c", f'exec -a dagster-daemon {sys.executable} -c '
                             f'"import time; time.sleep(60)" run'], env=env)
    try:
        deadline = time.monotonic() + 30
        while not daemon_pids(home):
            assert time.monotonic() < deadline, "the fake daemon never appeared"
            time.sleep(0.05)
        served = daemon_build(home, {})
        assert served.folders == resolve_context({}, config_file=config).folders
        assert served.data_dir == tmp_path / "project" / "docs.rag-data"
        assert build_differences(resolve_context({}, config_file=config), served) == []
    finally:
        fake.kill()
        fake.wait()
    # No daemon left: the fallback environment is resolved instead.
    assert daemon_build(home, {"RAG_PIPELINE_DATA_DIR": str(tmp_path / "d")}).data_dir == \
        tmp_path / "d"
