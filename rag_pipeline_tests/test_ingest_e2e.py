"""End to end through Dagster for the ingest stage: a corpus of Markdown with a code comment,
plain text, HTML with inline elements and navigation, and files no format reads, materialised
into ``tmp_path`` (documents, the ``header`` chunks, embeddings with the hashed stand-in model)
and queried in DuckDB: exact statuses, offsets, labels. Then the corpus folder moves: paths
follow, nothing is re-extracted or re-embedded."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from rag_pipeline.core.index.plan import Stage, index_plan
from rag_pipeline.core.index.store import load_partition
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.definitions import build_definitions
from rag_pipeline.orchestration.automation import CHUNKS_JOB, DOCUMENTS_JOB, EMBEDDINGS_JOB
from rag_pipeline_tests.fake_embedder import HashedEmbedder, hashed_spec

# "# Guide" [0,7) | "Install it:" [9,20) | fence [22,68) holding "# fetch the package" at
# [28,47) | "## Use" [70,76) | "Run `tool`." [78,89) | "\n"
GUIDE = ("# Guide\n\nInstall it:\n\n```sh\n# fetch the package\npip install tool\n```\n\n"
         "## Use\n\nRun `tool`.\n")
# "Setup notes." [0,12) | "# run this first" [14,30) | "make setup" [31,41) | "\n"
NOTES = "Setup notes.\n\n# run this first\nmake setup\n"
PAGE = (b"<html><head><title>Tool Manual</title></head><body>"
        b"<nav><a href='/'>Home</a></nav>"
        b"<div class='header'><p>Next: <a href='b.html'>Use</a>, Up: <a href='index.html'>Top</a>"
        b"</p></div>"
        b"<h2>Options</h2>"
        b"<p>Each <var>option</var>s line sets the <code>library</code>, then stops.</p>"
        b"<pre># comment kept\ntool --all</pre></body></html>")
# "Options" [0,7) | "Each options line sets the library, then stops." [9,56) |
# "# comment kept\ntool --all" [58,83) | "\n"
PAGE_TEXT = "Options\n\nEach options line sets the library, then stops.\n\n# comment kept\ntool --all\n"


def write_corpus(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "guide.md").write_text(GUIDE, encoding="utf-8")
    (root / "notes.txt").write_text(NOTES, encoding="utf-8")
    (root / "page.html").write_bytes(PAGE)
    (root / "README").write_text("Read me.\n", encoding="utf-8")
    (root / "logo.7z").write_bytes(b"7z\xbc\xaf\x27\x1c")
    (root / "tool").write_bytes(b"\x7fELF\x02\x01\x01\x00")
    (root / ".hidden.md").write_text("# Hidden\n\nNever indexed.\n", encoding="utf-8")
    return root


def materialise(defs: dg.Definitions, instance: dg.DagsterInstance, corpus: Path,
                model_key: str) -> dict[str, dict[str, object]]:
    """documents, header chunks, header embeddings; each asset's metadata by asset name."""
    config = {"resources": {"corpus": {"config": {"path": str(corpus), "python_reference": False}}}}
    metadata: dict[str, dict[str, object]] = {}
    for job, key in ((DOCUMENTS_JOB, None), (CHUNKS_JOB, "header"),
                     (EMBEDDINGS_JOB, dg.MultiPartitionKey({"chunker": "header", "model": model_key}))):
        result = defs.resolve_job_def(job).execute_in_process(
            instance=instance, partition_key=key, run_config=config)
        assert result.success, job
        assert all(e.passed for e in result.get_asset_check_evaluations()), job
        for event in result.get_asset_materialization_events():
            mat = event.event_specific_data.materialization
            metadata[mat.asset_key.to_user_string()] = {
                k: getattr(v, "value", v) for k, v in mat.metadata.items()}
    return metadata


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("rag_pipeline.orchestration.assets.embeddings.load_embedder",
                        lambda spec, *_: HashedEmbedder(spec))
    spec = hashed_spec()
    corpus = write_corpus(tmp_path / "corpus")
    defs = build_definitions(data_dir=tmp_path / "data", corpus_dir=corpus, models=[spec])
    return defs, dg.DagsterInstance.ephemeral(), corpus, spec, tmp_path / "data"


def test_every_format_statuses_offsets_and_labels_in_duckdb(project):
    defs, instance, corpus, spec, data = project
    metadata = materialise(defs, instance, corpus, spec.key)
    assert (metadata["documents"]["documents_ok"], metadata["documents"]["documents_failed"],
            metadata["documents"]["documents_skipped"]) == (4, 0, 2)
    with duckdb.connect(str(data / "rag.duckdb"), read_only=True) as con:
        documents = con.execute("select document_id, status, format, error from documents "
                                "order by document_id").fetchall()
        page = con.execute("select canonical_text, notes from documents "
                           "where document_id = 'page.html'").fetchone()
        sections = con.execute("select document_id, s.title, s.start, s.end from "
                               "(select document_id, unnest(sections) s from documents) "
                               "order by document_id, s.start").fetchall()
        chunks = con.execute("select document_id, section, \"from\", \"to\", content from chunks "
                             "where chunker = 'header' order by document_id, \"from\"").fetchall()
    assert documents == [
        ("README", "ok", "text", None),
        ("guide.md", "ok", "markdown", None),
        ("logo.7z", "skipped", "", "no reader for .7z files, and not plain text (binary: its first "
                                   "bytes are those of a 7-Zip archive)"),
        ("notes.txt", "ok", "text", None),
        ("page.html", "ok", "html", None),
        ("tool", "skipped", "", "no reader for files named tool (without a suffix), and not plain "
                                "text (binary: its first bytes are those of a program (ELF))"),
    ]
    # The nav and the Texinfo panel are gone; no space invented around <var> or <code>.
    assert page == (PAGE_TEXT, [{"name": "dropped_chrome_elements", "value": "2"}])
    assert sections == [("guide.md", "Guide", 0, 0), ("guide.md", "Guide", 7, 70),
                        ("guide.md", "Use", 76, 90),
                        ("page.html", "Tool Manual", 0, 0), ("page.html", "Options", 7, 84)]
    assert chunks == [
        ("README", "README", 0, 8, "Read me."),
        # The fenced block stays whole with its "# fetch the package" comment, in "Guide".
        ("guide.md", "Guide", 9, 68, GUIDE[9:68]),
        ("guide.md", "Use", 78, 89, "Run `tool`."),
        # Plain text: "# run this first" is text, not a heading.
        ("notes.txt", "notes", 0, 41, "Setup notes.\n\n# run this first\nmake setup"),
        ("page.html", "Options", 9, 83, PAGE_TEXT[9:83]),
    ]
    assert "# fetch the package" in GUIDE[9:68] and "# comment kept" in PAGE_TEXT[9:83]


def test_a_moved_corpus_updates_paths_without_extracting_or_embedding(project):
    defs, instance, corpus, spec, data = project
    materialise(defs, instance, corpus, spec.key)
    before = load_partition(data, "header", spec.key)
    assert before.documents["guide.md"].path == str(corpus / "guide.md")
    moved = corpus.parent / "elsewhere" / "corpus"
    moved.parent.mkdir()
    shutil.move(corpus, moved)
    metadata = materialise(defs, instance, moved, spec.key)
    assert (metadata["documents"]["extracted"], metadata["documents"]["reused"],
            metadata["documents"]["moved"]) == (0, 4, 4)
    assert (metadata["chunks"]["chunks_added"], metadata["chunks"]["chunks_removed"]) == (0, 0)
    assert (metadata["embeddings"]["embedded"], metadata["embeddings"]["reused"]) == (0, 5)
    with duckdb.connect(str(data / "rag.duckdb"), read_only=True) as con:
        paths = con.execute("select document_id, path from documents where status = 'ok' "
                            "order by document_id").fetchall()
    assert paths == [(d, str(moved / d)) for d in ("README", "guide.md", "notes.txt", "page.html")]
    after = load_partition(data, "header", spec.key)
    # The served generation carries the new paths, so citation URLs follow the move.
    assert after.generation != before.generation
    assert after.documents["guide.md"].path == str(moved / "guide.md")


def test_under_automation_a_moved_corpus_reaches_the_embeddings(project):
    # The documents change (new paths) while every chunk stays as it was: the served
    # generation still names the old documents file, so the index plan (what the
    # index_automation sensor launches) must hold an embeddings step that publishes a
    # generation with the new paths (it requested nothing before the fix).
    defs, instance, corpus, spec, data = project
    materialise(defs, instance, corpus, spec.key)
    warehouse = Warehouse(data)
    assert index_plan(warehouse, ["header"], [spec.key], evaluate=False) == ()
    moved = corpus.parent / "moved"
    shutil.move(corpus, moved)
    config = {"resources": {"corpus": {"config": {"path": str(moved), "python_reference": False}}}}
    for job, key in ((DOCUMENTS_JOB, None), (CHUNKS_JOB, "header")):
        assert defs.resolve_job_def(job).execute_in_process(
            instance=instance, partition_key=key, run_config=config).success
    steps = index_plan(warehouse, ["header"], [spec.key], evaluate=False)
    assert [(s.stage, s.chunker, s.model) for s in steps] == [(Stage.EMBEDDINGS, "header", spec.key)]
