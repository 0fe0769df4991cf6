"""The build-side refusals of ``index_tables``, each shown on a planted flaw: a chunker whose
offsets do not slice exactly, and stored vectors of another model."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.embedding.models import ModelMismatchError
from rag_pipeline.core.embedding.wordpieces import wordpiece_counter
from rag_pipeline.core.index import builders as index_tables
from rag_pipeline.core.index.builders import (
    CHECKPOINT_TEXTS,
    GROUP_ROUNDS,
    OffsetError,
    checkpoint_group_texts,
    chunks_table,
    document_pages_table,
    document_records,
    documents_table,
    embeddings_table,
    source_entries_table,
)
from rag_pipeline.core.ingest import Anchor, Section, extract_corpus
from rag_pipeline.core.ingest.extracted import DocumentPage
from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus
from rag_pipeline_tests.core.ingest.pdf_fixtures import manual_pdf
from rag_pipeline_tests.fake_embedder import HashedEmbedder


@pytest.fixture
def records(tmp_path: Path):
    return extract_corpus(write_corpus(tmp_path / "corpus", TINY_DOCS)).records


def test_a_chunker_with_a_shifted_offset_is_refused(records, hashed_embedder: HashedEmbedder,
                                                    monkeypatch: pytest.MonkeyPatch):
    original = index_tables.chunk_document

    def shifted(*args, **kwargs):
        # Planted flaw (trips OffsetError): the first chunk of each document claims to start
        # one character later than its content does.
        chunks = original(*args, **kwargs)
        first = dataclasses.replace(chunks[0], start=chunks[0].start + 1, end=chunks[0].end + 1)
        return [first, *chunks[1:]]

    monkeypatch.setattr(index_tables, "chunk_document", shifted)
    with pytest.raises(OffsetError, match=r"^1 chunk\(s\) of guide/config\.md do not slice exactly: "
                                          r"\['guide/config\.md:27-98'\]$"):
        chunks_table(records, ChunkingStrategy.HEADER, wordpiece_counter(hashed_embedder.spec))


def _embedded(records, embedder: HashedEmbedder) -> tuple[pa.Table, pa.Table]:
    chunks, _ = chunks_table(records, ChunkingStrategy.HEADER, wordpiece_counter(embedder.spec))
    table, _ = embeddings_table(chunks, None, embedder)
    return chunks, table


def test_stored_vectors_are_reused_for_the_same_model(records, hashed_embedder: HashedEmbedder):
    chunks, previous = _embedded(records, hashed_embedder)
    table, stats = embeddings_table(chunks, previous, hashed_embedder)
    assert (stats.embedded, stats.reused, stats.removed) == (0, 5, 0)
    assert table.equals(previous)


@pytest.mark.parametrize("restamped", [1, 5])
def test_stored_vectors_of_another_model_are_refused(records, hashed_embedder: HashedEmbedder,
                                                     restamped: int):
    chunks, previous = _embedded(records, hashed_embedder)
    # Planted flaw (trips the mixed-model refusal): the stored partition holds rows of other
    # weights (one row, or all of them), which must never be reused or mixed with new ones.
    stamps = ["00000000"] * restamped + previous.column("model_fingerprint").to_pylist()[restamped:]
    previous = previous.set_column(previous.schema.get_field_index("model_fingerprint"),
                                   "model_fingerprint", pa.array(stamps, pa.string()))
    with pytest.raises(ModelMismatchError, match=r"vector spaces are never mixed$"):
        embeddings_table(chunks, previous, hashed_embedder)


def test_document_structure_survives_parquet_and_duckdb(records, tmp_path: Path):
    import duckdb
    import pyarrow.parquet as pq

    structured = dataclasses.replace(
        records[0], sections=(Section("Intro", 0, 10, 2),), anchors=(Anchor(0, 10, "page=1"),),
        notes=(("dropped_lines", "14"),))
    pq.write_table(documents_table([structured, records[1]]), tmp_path / "documents.parquet")
    back = document_records(pq.read_table(tmp_path / "documents.parquet"),
                            source_entries_table([structured, records[1]]))
    assert back == [structured, records[1]]
    # The source fingerprints live beside the table, not in it: a touched file changes no row.
    assert "source_fingerprint" not in pq.read_schema(tmp_path / "documents.parquet").names
    assert [r.source_fingerprint for r in document_records(
        pq.read_table(tmp_path / "documents.parquet"))] == ["", ""]
    with duckdb.connect() as con:
        rows = con.execute(
            "select s.title, s.level, a.locator, n.value from (select unnest(sections) s, "
            "unnest(anchors) a, unnest(notes) n from read_parquet(?) where document_id = ?)",
            [str(tmp_path / "documents.parquet"), structured.document_id]).fetchall()
    assert rows == [("Intro", 2, "page=1", "14")]


def test_a_documents_table_without_structure_columns_reads_as_none(records):
    # A table written before sections/anchors/notes existed: the columns are simply absent.
    old = documents_table(records).drop_columns(["sections", "anchors", "notes"])
    assert document_records(old, source_entries_table(records)) == [
        dataclasses.replace(r, sections=()) for r in records]


def test_document_pages_has_a_row_per_pdf_page_and_none_for_other_formats(records, tmp_path: Path):
    import duckdb
    import pyarrow.parquet as pq

    scanned = dataclasses.replace(
        records[0], document_id="scan.pdf", format="pdf",
        anchors=(Anchor(0, 10, "page=1"), Anchor(10, 25, "page=2")),
        pages=(DocumentPage(1, "text", None, 10), DocumentPage(2, "ocr", 41.0, 15, flagged=True)))
    failed = dataclasses.replace(scanned, document_id="broken.pdf", status="failed")
    table = document_pages_table([records[0], scanned, failed])
    # The Markdown record has no pages; the failed PDF none either.
    assert table.to_pylist() == [
        {"document_id": "scan.pdf", "page": 1, "source": "text", "ocr_confidence": None, "chars": 10,
         "flagged": False},
        {"document_id": "scan.pdf", "page": 2, "source": "ocr", "ocr_confidence": 41.0, "chars": 15,
         "flagged": True}]
    pq.write_table(table, tmp_path / "document_pages.parquet")
    with duckdb.connect() as con:
        assert con.execute("select document_id, page from read_parquet(?) where flagged",
                           [str(tmp_path / "document_pages.parquet")]).fetchall() == [("scan.pdf", 2)]


def test_chunks_record_the_page_they_start_on_and_their_last_page(tmp_path: Path,
                                                                  hashed_embedder: HashedEmbedder):
    import duckdb
    import pyarrow.parquet as pq

    corpus = write_corpus(tmp_path / "corpus", TINY_DOCS)
    (corpus / "manual.pdf").write_bytes(manual_pdf())
    records = extract_corpus(corpus).records
    table, _ = chunks_table(records, ChunkingStrategy.HEADER, wordpiece_counter(hashed_embedder.spec))
    pq.write_table(table, tmp_path / "chunks.parquet")
    with duckdb.connect() as con:
        pdf_rows = con.execute("select section, page, last_page from read_parquet(?) where document_id = "
                               "'manual.pdf' order by ordinal", [str(tmp_path / "chunks.parquet")]).fetchall()
        unpaged = con.execute("select count(*), count(page), count(last_page) from read_parquet(?) "
                              "where document_id <> 'manual.pdf'",
                              [str(tmp_path / "chunks.parquet")]).fetchone()
    # The Introduction's chunk holds the paragraph that runs from page 2 on to page 3: it cites
    # page 2 and records page 3 as its last. The footnote at the foot of page 2 is a section of
    # its own, labelled as the Introduction's footnote, on page 2 only.
    # The table on page 3 is one row a chunk, its header row with the first row.
    assert pdf_rows == [("Introduction", 2, 3), ("Introduction (footnote)", 2, 2), ("Tables", 3, 3),
                        ("Tables", 3, 3), ("Columns", 4, 4)]
    # Markdown chunks have no pages.
    assert unpaged == (5, 0, 0)


def _chunks(count: int) -> pa.Table:
    """``count`` distinct texts t00, t01, ... of decreasing word-piece counts (t00 longest)."""
    texts = [f"t{i:02d}" for i in range(count)]
    return pa.table({"chunk_id": [f"id-{t}" for t in texts], "text": texts,
                     "text_sha256": [f"sha-{t}" for t in texts],
                     "wordpieces": list(range(count, 0, -1))})


class _TwoLanes:
    """A stand-in embedder of two lanes with batches of one text (two texts at once), whose
    ``embed`` of a group is ``behave(group, progress)``."""

    lanes = 2
    texts_at_once = 2

    def __init__(self, hashed: HashedEmbedder, behave) -> None:
        self.spec = dataclasses.replace(hashed.spec, batch_size=1)
        self.hashed = hashed
        self.behave = behave
        self.begun: list[str] = []

    def embed(self, group, progress, **options):
        self.begun.append(group[0])
        self.behave(list(group), progress)
        return self.hashed.embed(group)


def _one_by_one(group, progress):
    for finished in range(1, len(group) + 1):
        progress(finished, len(group))


def test_a_checkpoint_group_holds_eight_times_what_its_embedder_embeds_at_once():
    assert (GROUP_ROUNDS, CHECKPOINT_TEXTS) == (8, 256)
    assert [checkpoint_group_texts(n) for n in (0, 32, 33, 100 * 64)] == [256, 256, 264, 51_200]
    assert checkpoint_group_texts(3, least=4) == 24


def test_an_embedder_of_one_lane_that_embeds_many_texts_at_once_gets_groups_as_wide(
        hashed_embedder: HashedEmbedder):
    # A cluster of three CPUs with shards of one text: groups of 24, not of 4. An embedder of
    # two lanes overlaps its groups instead, and keeps groups of 4.
    sizes: list[int] = []

    class Wide:
        spec = hashed_embedder.spec
        texts_at_once = 3

        def embed(self, batch, **options):
            sizes.append(len(batch))
            return hashed_embedder.embed(batch)

    checkpointed: list[int] = []
    table, _ = embeddings_table(_chunks(30), None, Wide(), checkpoint_every=4,
                                checkpoint=lambda s, _v: checkpointed.append(len(s)))
    assert (sizes, checkpointed, table.num_rows) == ([24, 6], [24, 6], 30)
    lanes = _TwoLanes(hashed_embedder, _one_by_one)
    embeddings_table(_chunks(10), None, lanes, checkpoint_every=4)
    assert lanes.begun == ["t00", "t04", "t08"]


def test_the_next_group_begins_when_a_group_has_a_batch_a_lane_left(
        hashed_embedder: HashedEmbedder):
    # Two lanes, batches of one (groups of 16): the second group begins once the first has two
    # texts left, not before (bounded: the wait fails the test in 10 s); checkpoints, vectors
    # and the progress count keep the groups' order.
    second_began = threading.Event()
    seen: list[tuple[int, bool]] = []

    def behave(group, progress):
        if group[0] != "t00":
            second_began.set()
            return _one_by_one(group, progress)
        for finished in range(1, 14):
            seen.append((finished, second_began.is_set()))
            progress(finished, 16)
        # Three texts left: half a second in which the second group must not begin.
        seen.append((13, second_began.wait(0.5)))
        progress(14, 16)
        assert second_began.wait(10), "the second group did not begin"
        progress(15, 16)
        progress(16, 16)

    embedder = _TwoLanes(hashed_embedder, behave)
    checkpointed: list[list[str]] = []
    said: list[tuple[int, int]] = []
    chunks = _chunks(20)
    table, stats = embeddings_table(chunks, None, embedder, checkpoint_every=16,
                                    progress=lambda done, total: said.append((done, total)),
                                    checkpoint=lambda s, _v: checkpointed.append(s))
    assert seen == [(finished, False) for finished in [*range(1, 14), 13]]
    assert embedder.begun == ["t00", "t16"]
    shas = chunks.column("text_sha256").to_pylist()
    assert checkpointed == [shas[:16], shas[16:]]
    assert sorted(said) == said and said[-1] == (20, 20) and len(said) == 20
    assert table.column("vector").to_pylist() == hashed_embedder.embed(
        chunks.column("text").to_pylist()).tolist()
    assert stats.embedded == 20


@pytest.mark.parametrize(("failing", "begun", "kept"), [
    ("t00", ["t00"], 0), ("t16", ["t00", "t16"], 1)])
def test_a_failing_group_begins_no_further_group_and_stops_the_checkpoints(
        hashed_embedder: HashedEmbedder, failing: str, begun: list[str], kept: int):
    def behave(group, _progress):
        if group[0] == failing:
            raise RuntimeError(f"group of {group[0]} failed")

    embedder = _TwoLanes(hashed_embedder, behave)
    checkpointed: list[list[str]] = []
    chunks = _chunks(36)  # groups of 16, 16 and 4
    with pytest.raises(RuntimeError, match=f"group of {failing} failed"):
        embeddings_table(chunks, None, embedder, checkpoint_every=16,
                         checkpoint=lambda s, _v: checkpointed.append(s))
    assert embedder.begun == begun
    assert checkpointed == [chunks.column("text_sha256").to_pylist()[:16]] * kept


def _poll_until_stopped(progress, stopped: list[str]) -> None:
    for _ in range(1000):  # bounded: 10 s, then the test fails
        try:
            progress(0, 4)
        except Exception as exc:  # noqa: BLE001 - the stop signal is private
            stopped.append(type(exc).__name__)
            raise
        time.sleep(0.01)


def test_a_group_begun_ahead_stops_when_the_caller_stops_reading(
        hashed_embedder: HashedEmbedder):
    # The first group's checkpoint fails while the second group runs ahead: the write's error
    # is raised, and the group ahead stops.
    stopped: list[str] = []

    def behave(group, progress):
        if group[0] == "t00":
            return _one_by_one(group, progress)
        _poll_until_stopped(progress, stopped)

    def checkpoint(_shas, _vectors):
        raise OSError("No space left on device")

    with pytest.raises(OSError, match="No space left"):
        embeddings_table(_chunks(20), None, _TwoLanes(hashed_embedder, behave),
                         checkpoint_every=16, checkpoint=checkpoint)
    assert stopped == ["_GroupsStopped"]


def test_a_group_begun_ahead_stops_when_the_group_before_it_fails(
        hashed_embedder: HashedEmbedder):
    second_began = threading.Event()
    stopped: list[str] = []

    def behave(group, progress):
        if group[0] == "t00":
            progress(14, 16)
            assert second_began.wait(10), "the second group did not begin"
            raise RuntimeError("group of t00 failed")
        second_began.set()
        _poll_until_stopped(progress, stopped)

    with pytest.raises(RuntimeError, match="group of t00 failed"):
        embeddings_table(_chunks(20), None, _TwoLanes(hashed_embedder, behave),
                         checkpoint_every=16)
    assert stopped == ["_GroupsStopped"]


def test_texts_are_embedded_and_checkpointed_longest_first_across_all_of_them(
        hashed_embedder: HashedEmbedder):
    # Five distinct texts of 3, 9, 1, 9 and 5 word-pieces, checkpointed two at a time: the
    # groups come from one length order over all five (ties by digest), so the embedder's
    # batches inside them are those of one pass over every text.
    texts = ["c", "a", "e", "b", "d"]
    counts = [3, 9, 1, 9, 5]
    shas = [f"sha-{t}" for t in texts]
    chunks = pa.table({"chunk_id": [f"id-{t}" for t in texts], "text": texts,
                       "text_sha256": shas, "wordpieces": counts})
    embedded: list[list[str]] = []
    checkpointed: list[list[str]] = []

    class Recording:
        spec = hashed_embedder.spec

        def embed(self, batch, **options):
            embedded.append(list(batch))
            return hashed_embedder.embed(batch, **options)

    table, stats = embeddings_table(chunks, None, Recording(), checkpoint_every=2,
                                    checkpoint=lambda s, _v: checkpointed.append(s))
    assert embedded == [["a", "b"], ["d", "c"], ["e"]]
    assert checkpointed == [["sha-a", "sha-b"], ["sha-d", "sha-c"], ["sha-e"]]
    assert stats.embedded == 5
    assert table.column("chunk_id").to_pylist() == ["id-c", "id-a", "id-e", "id-b", "id-d"]


def test_an_archives_and_a_mailboxs_member_lists_are_not_chunked(tmp_path: Path,
                                                                 hashed_embedder: HashedEmbedder):
    """Found by a new team: an mbox's own text, ``message-1.eml`` to ``message-3.eml``, was a
    chunk and was cited for a question about incident response times. Its messages, and an
    archive's members, are documents of their own and are chunked as such."""
    from rag_pipeline.core.ingest.formats.mail import content_tag
    from rag_pipeline_tests.core.ingest.archives import zipped

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "bundle.zip").write_bytes(zipped({"notes/one.md": "# One\n\nThe first note.\n"}))
    (corpus / "inbox.mbox").write_bytes(
        b"From alice@example.com Mon Jan  1 00:00:00 2026\nSubject: Hello\n\nThe first mail.\n")
    records = extract_corpus(corpus).records
    tag = content_tag(b"Subject: Hello\n\nThe first mail.\n")
    message = f"inbox.mbox/message-{tag}.eml"
    assert sorted((r.document_id, r.status) for r in records) == [
        ("bundle.zip", "ok"), ("bundle.zip/notes/one.md", "ok"), ("inbox.mbox", "ok"),
        (message, "ok")]
    table, stats = chunks_table(records, ChunkingStrategy.HEADER, wordpiece_counter(hashed_embedder.spec))
    assert sorted(set(table.column("document_id").to_pylist())) == [
        "bundle.zip/notes/one.md", message]
    assert stats.without_chunks == ()
