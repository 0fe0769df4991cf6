"""``init``: a folder's configuration, which ``models`` then reads with the production profile."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from rag_pipeline.cli import main


def test_init_writes_a_folder_config_that_models_reads_with_the_production_profile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # --config is this invocation's, never written into the process's environment.
    monkeypatch.delenv("RAG_PIPELINE_CONFIG", raising=False)
    docs = tmp_path / "docs"
    docs.mkdir()
    written = CliRunner().invoke(main, ["init", str(docs)])
    assert written.exit_code == 0, written.output
    config = tmp_path / "docs.rag_pipeline.toml"
    assert written.output.splitlines() == [
        f"wrote {config}: corpus {docs}, data folder {tmp_path / 'docs.rag-data'}, profile "
        "production", f"next: rag-pipeline --config {config} index"]
    again = CliRunner().invoke(main, ["init", str(docs)])
    assert (again.exit_code, again.output) == (2, f"error: {config} exists: edit it, or pass "
                                                  "--force to write it again\n")
    listed = CliRunner().invoke(main, ["--config", str(config), "models"])
    assert listed.exit_code == 0, listed.output
    assert "RAG_PIPELINE_CONFIG" not in os.environ
    lines = listed.output.splitlines()
    assert lines[0] == f"config: {config}"
    assert "profiles (`index --profile NAME`; without it: production (the configured corpus)):" in lines
    assert "  production: header x all-MiniLM-L6-v2" in lines
    # Only the production profile's chunker is missing, not all six.
    assert any(line.startswith("  all-MiniLM-L6-v2@") and line.endswith(
        f"embeddings: none; not built yet: header (run `rag-pipeline --config {config} index`)")
        for line in lines)
    # The int8 model is not in the production profile: `index` would never build it, so the
    # line must not send the user to run `index` (it did: "not built yet: header").
    assert "  all-MiniLM-L6-v2-int8@b4e41131     embeddings: none; not in profile production, which " \
           f"`index` builds (`rag-pipeline --config {config} index --profile evaluation` builds " \
           "it)" in lines
