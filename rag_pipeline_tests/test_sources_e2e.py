"""End to end over the two kept sources: an S3 prefix on moto's server (127.0.0.1) and a git
repository in a temporary folder are indexed through the project's Dagster jobs (documents,
the ``header`` chunks, the embeddings and their published generation, with the hashed stand-in
model); then a file is deleted, one edited, one added and one renamed at the source, the index
runs again, and DuckDB serves exactly the new state: nothing deleted is in a served chunk,
nothing outside the prefix or untracked ever was, the rename kept its vectors (only new texts
were embedded), and the reconciliation table says so."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from click.testing import CliRunner

from rag_pipeline.cli import main
from rag_pipeline.definitions import build_definitions
from rag_pipeline.orchestration.automation import CHUNKS_JOB, DOCUMENTS_JOB, EMBEDDINGS_JOB
from rag_pipeline_tests.core.ingest.sources.conftest import Bucket, Repo, start_moto, stop
from rag_pipeline_tests.fake_embedder import HashedEmbedder, hashed_spec

pytestmark = pytest.mark.slow  # two indexes, each twice, through Dagster (tens of seconds)

DOCS = {
    "keep.md": "# Keeping\n\nThe lighthouse keeper trims the wick every evening at dusk.\n",
    "edit.md": "# Editing\n\nThe ferry leaves the harbour at seven sharp.\n",
    "gone.md": "# Removal\n\nZebras graze beside the old quarry road.\n",
    "old/name.md": "# Moving\n\nCopper kettles whistle louder than tin ones do.\n",
}
EDITED = "# Editing\n\nThe ferry leaves the harbour at nine sharp, never earlier.\n"
ADDED = "# Adding\n\nGlaciers carve fjords over many thousands of years.\n"


@dataclasses.dataclass
class Indexed:
    defs: dg.Definitions
    instance: dg.DagsterInstance
    db: Path
    key: str

    def run(self) -> dict[str, dict]:
        metadata = {}
        for job, partition in ((DOCUMENTS_JOB, None), (CHUNKS_JOB, "header"),
                               (EMBEDDINGS_JOB, dg.MultiPartitionKey({"chunker": "header",
                                                                      "model": self.key}))):
            result = self.defs.resolve_job_def(job).execute_in_process(
                instance=self.instance, partition_key=partition, raise_on_error=False)
            assert result.success, job
            for event in result.get_asset_materialization_events():
                node = event.asset_key.to_user_string()
                metadata[node] = {k: getattr(v, "value", v)
                                  for k, v in event.materialization.metadata.items()}
        return metadata

    def query(self, sql: str) -> list[tuple]:
        with duckdb.connect(str(self.db), read_only=True) as con:
            return con.execute(sql).fetchall()


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch):
    spec = hashed_spec()
    monkeypatch.setattr("rag_pipeline.orchestration.assets.embeddings.load_embedder",
                        lambda s, *_: HashedEmbedder(s))
    return spec


def _indexed(tmp_path: Path, corpus: str, spec) -> Iterator[Indexed]:
    defs = build_definitions(data_dir=tmp_path / "data", corpus_dir=corpus, models=[spec])
    with dg.DagsterInstance.ephemeral(tempdir=str(tmp_path / "home")) as instance:
        yield Indexed(defs, instance, tmp_path / "data" / "rag.duckdb", spec.key)


def _served(index: Indexed) -> dict[str, str]:
    """Each served document's text as its chunks hold it (the header partition)."""
    rows = index.query("select document_id, string_agg(content, ' ' order by \"from\") from "
                       "chunks where chunker = 'header' group by all order by all")
    return dict(rows)


def _check_the_new_state(index: Indexed, before: set[str], metadata: dict, revision: str | None):
    served = _served(index)
    assert sorted(served) == ["edit.md", "keep.md", "new.md", "new/place.md"]
    assert "nine sharp" in served["edit.md"] and "seven" not in served["edit.md"]
    assert "Copper kettles" in served["new/place.md"]
    everything = " ".join(served.values())
    for never in ("Zebras", "OUTSIDE", "UNTRACKED", "seven sharp"):
        assert never not in everything
    assert index.query("select count(*) from embeddings e join chunks c using (chunk_id) "
                       "where c.document_id = 'gone.md'") == [(0,)]
    # Only texts the first generation did not hold were embedded: the rename kept its vectors.
    new_texts = {sha for (sha,) in index.query("select text_sha256 from chunks where chunker = "
                                               "'header'")} - before
    assert metadata["embeddings"]["embedded"] == len(new_texts) > 0
    assert index.query("select change, document_id, coalesce(previous_id, ''), revision from "
                       "reconciliation where change not in ('unchanged', 'failed') order by all") == [
        ("added", "new.md", "", revision), ("changed", "edit.md", "", revision),
        ("deleted", "gone.md", "", revision), ("renamed", "new/place.md", "old/name.md", revision)]
    assert (metadata["documents"]["extracted"], metadata["documents"]["reconciliation.unchanged"]) == (2, 1)


def test_an_s3_prefix_reconciles_exactly(tmp_path: Path, stand_in):
    server, endpoint = start_moto()
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
                                "AWS_SECRET_ACCESS_KEY": "testing",
                                "AWS_DEFAULT_REGION": "us-east-1"}.items():
                patch.setenv(name, value)
            bucket = Bucket(_settings(endpoint), "team-docs")
            for key, text in DOCS.items():
                bucket.put(f"exports/{key}", text)
            bucket.put("elsewhere/outside.md", "# Outside\n\nOUTSIDE the prefix.\n")
            bucket.put("exports-old/stale.md", "# Stale\n\nOUTSIDE too, beside the prefix.\n")
            bucket.put("exports/", "# The prefix's own key, with bytes\n")
            for index in _indexed(tmp_path, "s3://team-docs/exports", stand_in):
                first = index.run()
                assert first["documents"]["documents_ok"] == 4
                assert index.query("select document_id, status from documents where status <> "
                                   "'ok'") == [("/", "failed")]
                assert sorted(_served(index)) == sorted(DOCS)
                assert index.query("select path from documents where document_id = 'keep.md'") == [
                    ("s3://team-docs/exports/keep.md",)]
                before = {sha for (sha,) in index.query("select text_sha256 from chunks")}
                bucket.delete("exports/gone.md")
                bucket.put("exports/edit.md", EDITED)
                bucket.put("exports/new.md", ADDED)
                bucket.client.copy_object(Bucket="team-docs", Key="exports/new/place.md",
                                          CopySource={"Bucket": "team-docs",
                                                      "Key": "exports/old/name.md"})
                bucket.delete("exports/old/name.md")
                _check_the_new_state(index, before, index.run(), None)
                assert index.query("select change, document_id from reconciliation where change = "
                                   "'failed'") == [("failed", "/")]
    finally:
        stop(server)


def _settings(endpoint: str):
    from rag_pipeline.core.ingest.sources import S3Settings

    return S3Settings(endpoint_url=endpoint, region="us-east-1", access_key_id="testing",
                      secret_access_key="testing")


def test_a_git_repository_reconciles_exactly(tmp_path: Path, stand_in):
    repo = Repo(tmp_path / "repo")
    for name, text in DOCS.items():
        repo.write(name, text)
    repo.commit("first")
    repo.write("scratch.md", "# Scratch\n\nUNTRACKED notes, never committed.\n")
    for index in _indexed(tmp_path, repo.uri, stand_in):
        first = index.run()
        assert first["documents"]["documents_ok"] == 4
        assert sorted(_served(index)) == sorted(DOCS)
        before = {sha for (sha,) in index.query("select text_sha256 from chunks")}
        repo.git("rm", "--quiet", "gone.md")
        repo.write("edit.md", EDITED)
        repo.write("new.md", ADDED)
        (repo.path / "new").mkdir()
        repo.git("mv", "old/name.md", "new/place.md")
        repo.git("add", "edit.md", "new.md")
        repo.git("commit", "--quiet", "-m", "second")
        commit = repo.git("rev-parse", "HEAD")
        _check_the_new_state(index, before, index.run(), commit)
        assert index.query("select count(*) from documents where document_id = 'scratch.md'") == [(0,)]
        status = CliRunner().invoke(main, ["--data-dir", str(tmp_path / "data"), "status"])
        assert status.exit_code == 0, status.output
        lines = status.output.splitlines()
        (first_line,) = [line for line in lines if line.startswith("last reconciliation")]
        assert first_line.startswith(f"last reconciliation ({repo.uri} at {commit}, ")
        assert first_line.endswith("): added 1, changed 1, renamed 1, deleted 1, unchanged 1, "
                                  "failed 0, skipped 0, hidden 0")
        assert [line for line in lines if line.startswith("  ") and line.split()[0] in (
            "added", "changed", "renamed", "deleted")] == [
            "  added     new.md", "  changed   edit.md", "  renamed   old/name.md -> new/place.md",
            "  deleted   gone.md"]
