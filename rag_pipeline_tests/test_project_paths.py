"""resolve_context: one build from the CLI's options, the RAG_PIPELINE_* variables and the
configuration file, in that order; context_environment hands it to another process intact."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.config.build_context import BuildContext
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.project_paths import (
    DEFAULT_EVAL_DIR,
    context_environment,
    corpus_export_dir,
    resolve_context,
)

FOLDER_CONFIG = """
[index]
chunkers = ["header", "boundaries"]
corpus = "docs"
data_dir = "docs.rag-data"

[[models]]
name = "ref"
path = "model"
default = true

[[models]]
name = "other"
path = "model"
window = 128
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    model = tmp_path / "model"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "model.safetensors").write_bytes(b"weights")
    (model / "1_Pooling" / "config.json").write_text('{"word_embedding_dimension": 8}')
    (tmp_path / "docs").mkdir()
    (tmp_path / "rag_pipeline.toml").write_text(FOLDER_CONFIG)
    return tmp_path


def test_the_configuration_file_names_the_folders_and_the_profile(project: Path):
    build = resolve_context({"RAG_PIPELINE_CONFIG": str(project / "rag_pipeline.toml")})
    # A user's corpus ([index] corpus) gets the production profile: header x the default model.
    assert (build.profile, build.chunkers, [m.name for m in build.models]) == (
        "production", (ChunkingStrategy.HEADER,), ["ref"])
    assert build.folders.data_dir == project / "docs.rag-data"
    assert build.folders.tables_at == str(project / "docs.rag-data" / "warehouse")
    assert (build.corpus, build.python_reference) == (project / "docs", False)
    assert build.gold_path == DEFAULT_EVAL_DIR / "gold.jsonl"


def test_options_win_over_variables_which_win_over_the_file(project: Path, tmp_path: Path):
    environ = {"RAG_PIPELINE_CONFIG": str(project / "rag_pipeline.toml"),
               "RAG_PIPELINE_DATA_DIR": "from-env", "RAG_PIPELINE_PROFILE": "evaluation"}
    build = resolve_context(environ, cwd=tmp_path)
    assert build.data_dir == tmp_path / "from-env"
    assert (build.profile, build.chunker_keys, [m.name for m in build.models]) == (
        "evaluation", ("header", "boundaries"), ["ref", "other"])
    build = resolve_context(environ, data_dir=tmp_path / "option", profile="production",
                            location=str(tmp_path / "tables"))
    assert (build.data_dir, build.profile, build.warehouse.location) == (
        tmp_path / "option", "production", str(tmp_path / "tables"))


def test_a_corpus_variable_naming_a_uri_no_source_reads_is_refused_naming_it(project: Path):
    """Found by a code review: it was read only by the documents run, which failed without
    naming the variable."""
    from rag_pipeline.core.embedding.models import ModelConfigError

    environ = {"RAG_PIPELINE_CONFIG": str(project / "rag_pipeline.toml"),
               "RAG_PIPELINE_CORPUS": "ftp://x/y"}
    with pytest.raises(ModelConfigError) as raised:
        resolve_context(environ)
    assert str(raised.value) == ("RAG_PIPELINE_CORPUS: ftp://x/y: not a corpus URI "
                                 "(s3://bucket/prefix, git+file:///repo, git+https://host/repo)")
    environ["RAG_PIPELINE_CORPUS"] = "s3://bucket/docs"
    assert resolve_context(environ).corpus == "s3://bucket/docs"


def test_the_bundled_corpus_is_exported_into_the_data_folder(tmp_path: Path):
    build = resolve_context({"RAG_PIPELINE_DATA_DIR": str(tmp_path / "data")})
    assert (build.corpus, build.python_reference, build.profile) == (
        corpus_export_dir(tmp_path / "data"), True, "evaluation")


def test_the_environment_of_a_build_resolves_back_to_it(project: Path, tmp_path: Path):
    config = project / "rag_pipeline.toml"
    for build in (resolve_context({}, config_file=config, profile="evaluation"),
                  resolve_context({}, config_file=config, data_dir=tmp_path / "d",
                                  location=str(tmp_path / "elsewhere"))):
        again = resolve_context(context_environment(build, config), cwd=Path("/"))
        assert (again.folders, again.profile, again.chunkers, again.model_keys) == (
            build.folders, build.profile, build.chunkers, build.model_keys)
    # The data folder's own tables need no variable: the location follows the data folder.
    assert "RAG_PIPELINE_WAREHOUSE" not in context_environment(
        resolve_context({}, config_file=config), config)


def test_a_build_refuses_an_empty_profile_and_shared_keys(tmp_path: Path):
    model = resolve_context({}, data_dir=tmp_path).models[0]
    common = dict(profile="p", warehouse=Warehouse(tmp_path), corpus=tmp_path,
                  python_reference=False, eval_dir=tmp_path)
    with pytest.raises(ValueError, match="profile 'p' builds no chunker"):
        BuildContext(chunkers=(), models=(model,), **common)
    with pytest.raises(ValueError, match="partition keys of more than one declared model"):
        BuildContext(chunkers=(ChunkingStrategy.HEADER,), models=(model, model), **common)
