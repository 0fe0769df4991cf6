"""DOCX, CSV, XLSX, WebVTT and SRT end to end: a real Dagster materialisation into a temp folder,
then DuckDB: every chunk slices its document exactly and cites the right place in the file."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from rag_pipeline.core.answer.ask import citations_for
from rag_pipeline.core.index.store import load_partition
from rag_pipeline.core.ingest import Anchor, TableSpan, format_named
from rag_pipeline.core.retrieval.retriever import Hit
from rag_pipeline.definitions import build_definitions
from rag_pipeline.orchestration.automation import CHUNKS_JOB, DOCUMENTS_JOB, EMBEDDINGS_JOB
from rag_pipeline_tests.core.ingest.formats.test_docx import manual
from rag_pipeline_tests.core.ingest.formats.test_xlsx import cache_values
from rag_pipeline_tests.fake_embedder import HashedEmbedder, hashed_spec

# The embeddings job sets torch's thread count (RunCompute), so it imports torch: slow tier, though
# the vectors are the hashed stand-in's.
pytestmark = pytest.mark.slow

CSV_ROWS = 40
CUES = 40


def _parts_csv() -> bytes:
    lines = ["part,colour,stock"] + [f"part {n},colour {n % 7},{n * 3}" for n in range(1, CSV_ROWS + 1)]
    return ("\n".join(lines) + "\n").encode()


def _ledger_xlsx() -> bytes:
    from openpyxl import Workbook
    from openpyxl.comments import Comment

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Ledger 2026"
    sheet.append(["Account", "Amount", "Double"])
    for n in range(1, 31):
        sheet.append([f"account {n}", n * 10, f"=B{n + 1}*2"])
    sheet["B5"].comment = Comment("Refund pending", "Ana")  # left out: every citation says so
    buffer = io.BytesIO()
    workbook.save(buffer)
    return cache_values(buffer.getvalue(), 1, {f"B{n + 1}*2": str(n * 20) for n in range(1, 31)})


def _clock(seconds: int, separator: str) -> str:
    return f"00:{seconds // 60:02d}:{seconds % 60:02d}{separator}"


def _talk_vtt() -> bytes:
    cues = [f"{_clock(2 * n, '.')}000 --> {_clock(2 * n + 2, '.')}000\n<v Ada>Cue {n} says a few words "
            f"about topic {n}." for n in range(CUES)]
    return ("WEBVTT\n\n" + "\n\n".join(cues) + "\n").encode()


def _film_srt() -> bytes:
    cues = [f"{n + 1}\n{_clock(60 + n, ',')}500 --> {_clock(61 + n, ',')}250\nLine {n} of the film, said "
            "<i>slowly</i>." for n in range(CUES)]
    return ("\n\n".join(cues) + "\n").encode()


@dataclass(frozen=True)
class Materialised:
    db: Path
    data_dir: Path
    model_key: str
    second_run: dict[str, int]
    """The second documents run's ``extracted`` and ``reused`` counts."""


@pytest.fixture(scope="module")
def materialised(tmp_path_factory: pytest.TempPathFactory) -> Materialised:
    root = tmp_path_factory.mktemp("formats-e2e")
    corpus = root / "corpus"
    corpus.mkdir()
    (corpus / "manual.docx").write_bytes(manual())
    (corpus / "parts.csv").write_bytes(_parts_csv())
    (corpus / "ledger.xlsx").write_bytes(_ledger_xlsx())
    (corpus / "talk.vtt").write_bytes(_talk_vtt())
    (corpus / "film.srt").write_bytes(_film_srt())
    (corpus / "broken.xlsx").write_bytes(b"not a workbook")  # planted: fails alone, with its reason
    spec = hashed_spec()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("rag_pipeline.orchestration.assets.embeddings.load_embedder",
                      lambda s, *_: HashedEmbedder(s))
        defs = build_definitions(data_dir=root / "data", corpus_dir=corpus, models=[spec])
        instance = dg.DagsterInstance.ephemeral()
        # The chunks reach DuckDB when their generation is published, after the embeddings.
        embeddings = dg.MultiPartitionKey({"chunker": "header", "model": spec.key})
        for job, partition in ((DOCUMENTS_JOB, None), (CHUNKS_JOB, "header"), (EMBEDDINGS_JOB, embeddings)):
            assert defs.resolve_job_def(job).execute_in_process(
                instance=instance, partition_key=partition, raise_on_error=False).success
        again = defs.resolve_job_def(DOCUMENTS_JOB).execute_in_process(instance=instance,
                                                                       raise_on_error=False)
    metadata = again.asset_materializations_for_node("documents")[0].metadata
    return Materialised(root / "data" / "rag.duckdb", root / "data", spec.key,
                        {name: metadata[name].value for name in ("extracted", "reused")})


@pytest.fixture(scope="module")
def warehouse(materialised: Materialised) -> Path:
    return materialised.db


def test_a_second_run_extracts_nothing_and_backs_off_the_failed_file(materialised: Materialised):
    # Unchanged files under unchanged extractor stamps are reused; so is the failed one's record,
    # not retried while the file is as it was when it failed.
    assert materialised.second_run == {"extracted": 0, "reused": 6}


def _query(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def _chunks(db: Path, document_id: str) -> list[tuple[int, int, str]]:
    return _query(db, f"""select "from", "to", content from chunks where chunker = 'header'
                          and document_id = '{document_id}' order by "from" """)


def _fragments(db: Path, document_id: str) -> list[str]:
    """Each chunk's fragment as a citation makes it: the format asked, the anchors from DuckDB,
    the rows of a table it holds added."""
    ((fmt, anchors, tables),) = _query(db, "select format, anchors, tables from documents "
                                           f"where document_id = '{document_id}'")
    found = tuple(Anchor(a["start"], a["end"], a["locator"]) for a in anchors)
    spans = tuple(TableSpan(**{**t, "rows": tuple(t["rows"])}) for t in tables)
    return [format_named(fmt).cited_fragment(found, spans, start, end)
            for start, end, _ in _chunks(db, document_id)]


def _canonical(db: Path, document_id: str) -> str:
    return _query(db, f"select canonical_text from documents where document_id = '{document_id}'")[0][0]


def test_every_new_format_is_read_and_a_broken_file_fails_alone(warehouse: Path):
    assert _query(warehouse, "select document_id, format, status, extractor from documents order by 1") == [
        ("broken.xlsx", "xlsx", "failed", "xlsx-openpyxl"), ("film.srt", "srt", "ok", "srt-stdlib"),
        ("ledger.xlsx", "xlsx", "ok", "xlsx-openpyxl"), ("manual.docx", "docx", "ok", "docx-python-docx"),
        ("parts.csv", "csv", "ok", "csv-stdlib"), ("talk.vtt", "webvtt", "ok", "webvtt-py")]
    assert _query(warehouse, "select error from documents where status = 'failed'")[0][0].startswith(
        "unreadable XLSX: BadZipFile: File is not a zip file")


def test_every_chunk_is_its_documents_canonical_slice(warehouse: Path):
    rows = _query(warehouse, """
        select c.document_id, count(*), count(*) filter (
            where substring(d.canonical_text, c."from" + 1, c."to" - c."from") = c.content)
        from chunks c join documents d using (document_id) where c.chunker = 'header'
        group by 1 order by 1""")
    assert [(document_id, total == exact) for document_id, total, exact in rows] == [
        ("film.srt", True), ("ledger.xlsx", True), ("manual.docx", True), ("parts.csv", True),
        ("talk.vtt", True)]
    # Several chunks per long file: the fragments below cite spans of several rows and cues.
    assert all(count > 1 for document_id, count, _ in rows if document_id != "manual.docx")


def _line_range(canonical: str, start: int, end: int) -> tuple[int, int]:
    """0-based indices of the first and last line ``[start, end)`` touches (an oracle that
    counts newlines, independent of the anchors)."""
    return canonical.count("\n", 0, start), canonical.count("\n", 0, end - 1)


def test_csv_chunks_cite_their_rfc_7111_rows(warehouse: Path):
    canonical = _canonical(warehouse, "parts.csv")
    expected = []
    for start, end, _ in _chunks(warehouse, "parts.csv"):
        first, last = _line_range(canonical, start, end)  # line i is row i + 1: no blank rows
        expected.append(f"#row={first + 1}" if first == last else f"#row={first + 1}-{last + 1}")
    assert _fragments(warehouse, "parts.csv") == expected
    # One row a chunk, the header row (row 1) with the first data row.
    assert expected[0] == "#row=1-2" and expected[1] == "#row=3"
    assert expected[-1] == f"#row={CSV_ROWS + 1}" and len(expected) == CSV_ROWS


def test_xlsx_chunks_cite_their_sheet_and_cell_range(warehouse: Path):
    canonical = _canonical(warehouse, "ledger.xlsx")
    expected = []
    for start, end, _ in _chunks(warehouse, "ledger.xlsx"):
        first, last = _line_range(canonical, start, end)
        expected.append(f"#sheet=Ledger%202026&range=A{first + 1}:C{last + 1}")
    assert _fragments(warehouse, "ledger.xlsx") == expected
    assert expected[-1].endswith(":C31")
    assert "Account: account 30 | Amount: 300 | Double: 600" in canonical  # the cached values


def _cue_range(canonical: str, start: int, end: int, cue: re.Pattern[str]) -> tuple[int, int]:
    """The numbers of the first and last cue whose text ``[start, end)`` touches, found by
    matching each cue's own words in the canonical text."""
    spans = [(m.start(), m.end(), int(m.group(1))) for m in cue.finditer(canonical)]
    touched = [number for s, e, number in spans if s < end and e > start]
    return touched[0], touched[-1]


def test_webvtt_chunks_cite_first_cue_start_to_last_cue_end(warehouse: Path):
    canonical = _canonical(warehouse, "talk.vtt")
    assert canonical.startswith("Ada: Cue 0 says a few words about topic 0. Cue 1 says")
    cue = re.compile(r"(?:Ada: )?Cue (\d+) says a few words about topic \d+\.")
    expected = []
    for start, end, _ in _chunks(warehouse, "talk.vtt"):
        first, last = _cue_range(canonical, start, end, cue)
        expected.append(f"#t={2 * first}.000,{2 * last + 2}.000")
    assert _fragments(warehouse, "talk.vtt") == expected
    assert expected[-1].endswith(f",{2 * CUES}.000")


def test_srt_chunks_cite_first_cue_start_to_last_cue_end(warehouse: Path):
    canonical = _canonical(warehouse, "film.srt")
    cue = re.compile(r"Line (\d+) of the film, said slowly\.")
    expected = []
    for start, end, _ in _chunks(warehouse, "film.srt"):
        first, last = _cue_range(canonical, start, end, cue)
        expected.append(f"#t={60 + first}.500,{60 + last + 1}.250")
    assert _fragments(warehouse, "film.srt") == expected


def test_docx_chunks_keep_character_fragments_and_cite_their_table_rows(warehouse: Path):
    assert _fragments(warehouse, "manual.docx") == [
        f"#char={start},{end}" + ("&rows=1-1" if "Tea | 2.50" in content
                                  else "&rows=2-2" if content.startswith("Cake | 4") else "")
        for start, end, content in _chunks(warehouse, "manual.docx")]
    assert "Item | Cost | Note\nTea | 2.50 | hot" in _canonical(warehouse, "manual.docx")


def test_sheets_and_docx_headings_label_their_chunks(warehouse: Path):
    def sections(document_id: str) -> list[str]:
        return [s for (s,) in _query(warehouse, f"""select section from chunks where chunker = 'header'
                                                  and document_id = '{document_id}' order by "from" """)]

    # The table is one row a chunk (the header row with the first), the paragraph after it one.
    assert sections("manual.docx") == ["Install", "Install", "Prices", "Prices", "Prices", "Support"]
    assert set(sections("ledger.xlsx")) == {"Ledger 2026"}
    assert set(sections("parts.csv")) == {"parts"} and set(sections("talk.vtt")) == {"talk"}
    # the heading lines are structure: in the canonical text, in no chunk's content
    assert _query(warehouse, """select count(*) from chunks where chunker = 'header'
                                and document_id = 'manual.docx' and content like 'Prices%'""") == [(0,)]


def test_served_citations_carry_the_same_fragments_in_their_urls(materialised: Materialised):
    # The serving path: the published generation loaded as the query service loads it, each
    # chunk cited as an answer would cite it, under a base URL.
    index = load_partition(materialised.data_dir, "header", materialised.model_key)
    rows = range(len(index.document_ids))
    citations = citations_for(index, [Hit(row, 0.0, 0.0, (row,)) for row in rows],
                              "https://docs.example.org/c")
    by_document: dict[str, list[tuple[int, str, str]]] = {}
    for citation in citations:
        by_document.setdefault(citation.document_id, []).append(
            (citation.start, citation.fragment, citation.url))
    for document_id, cited in by_document.items():
        cited.sort()
        assert [fragment for _, fragment, _ in cited] == _fragments(materialised.db, document_id)
        # none of these formats is a page shown as text: the URL carries the format's fragment
        assert [url for _, _, url in cited] == [
            f"https://docs.example.org/c/{document_id}{fragment}" for _, fragment, _ in cited]
    assert sorted(by_document) == ["film.srt", "ledger.xlsx", "manual.docx", "parts.csv", "talk.vtt"]
    assert {c.document_id: c.left_out for c in citations if c.left_out} == {
        "ledger.xlsx": ("1 comment(s) left out (reviewers' remarks)",)}
    # A DOCX chunk of rows without the header row carries it; labelled rows (CSV, XLSX) do not.
    assert {(c.document_id, c.quote.split("\n")[0], c.table_header) for c in citations
            if c.table_header} == {("manual.docx", "Cake | 4", "Item | Cost | Note")}
