"""``config_path``: which configuration file, from ``RAG_PIPELINE_CONFIG`` or the project's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_pipeline.core.config.root import PROJECT_ROOT, ConfigNotFoundError, config_path


def test_the_variable_names_the_file_and_unset_or_empty_means_the_projects_own(tmp_path: Path):
    chosen = tmp_path / "team.toml"
    chosen.write_text("")
    assert config_path({"RAG_PIPELINE_CONFIG": str(chosen)}) == chosen
    assert config_path({"RAG_PIPELINE_CONFIG": ""}) == PROJECT_ROOT / "rag_pipeline.toml"
    assert config_path({}) == PROJECT_ROOT / "rag_pipeline.toml"


@pytest.mark.parametrize("name, what", [("missing.toml", "does not exist"), (".", "is a folder")])
def test_a_name_that_is_no_file_is_one_line_error(tmp_path: Path, name: str, what: str):
    target = tmp_path / name
    with pytest.raises(ConfigNotFoundError) as info:
        config_path({"RAG_PIPELINE_CONFIG": str(target)})
    assert str(info.value) == (f"RAG_PIPELINE_CONFIG={str(target)!r} {what}: it must name a "
                               "rag_pipeline.toml file (unset it for the project's own)")
