"""The configuration `rag-pipeline init` writes parses back to its corpus, its data folder and
the production profile."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rag_pipeline.core.config.init_file import folder_config_text
from rag_pipeline.core.config.parse import load_config, parse_config


def test_the_folder_config_parses_to_its_corpus_data_folder_and_the_production_profile(
        project: Path, tmp_path: Path):
    corpus = tmp_path / "team" / "docs"
    corpus.mkdir(parents=True)
    at = tmp_path / "team" / "docs.rag_pipeline.toml"
    base = load_config(project / "rag_pipeline.toml")
    text = folder_config_text(corpus, tmp_path / "team" / "docs.rag-data", at, base)
    config = parse_config(text, at.parent, at)
    assert (config.corpus, config.data_dir, config.model_cache, config.profile) == (
        corpus, tmp_path / "team" / "docs.rag-data", tmp_path / "team" / "docs.rag-data" / "models",
        "production")
    # The declarations are the project's (a `path` model resolved so the copy finds it).
    assert [replace(m, source=base.models[0].source) for m in config.models] == [
        replace(m, source=base.models[0].source) for m in base.models]
    assert config.models[0].source.resolve(config.root) == project / "model"
    assert '\ncorpus = "docs"\n' in text and '\ndata_dir = "docs.rag-data"\n' in text
