"""Tests for ``rag_pipeline.core.config.build_context``: the commands a context suggests."""

from __future__ import annotations

from pathlib import Path

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.config.build_context import BuildContext
from rag_pipeline.core.config.keys import declared_models
from rag_pipeline.core.storage.warehouse import Warehouse


def _context(tmp_path: Path, config_file: Path | None) -> BuildContext:
    return BuildContext("production", (ChunkingStrategy.HEADER,), declared_models()[:1],
                        Warehouse(tmp_path / "data"), tmp_path / "corpus", False, tmp_path,
                        config_file=config_file)


def test_a_suggested_command_names_the_configuration_file_the_context_came_from(tmp_path: Path):
    message = "Write one with `rag-pipeline gold draft`, then `rag-pipeline eval --gold FILE`"
    assert _context(tmp_path, None).commands_in(message) == message
    assert _context(tmp_path, Path("/teams/my team.toml")).commands_in(message) == (
        "Write one with `rag-pipeline --config '/teams/my team.toml' gold draft`, then "
        "`rag-pipeline --config '/teams/my team.toml' eval --gold FILE`")
