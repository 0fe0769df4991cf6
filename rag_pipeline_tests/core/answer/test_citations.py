"""Tests for ``rag_pipeline.core.answer.citations`` (and ``ask.citations_for`` over a tiny real index):
quotes slice the canonical text exactly, fragments, URLs and the prompt, as exact strings."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_pipeline.core.answer.ask import citations_for
from rag_pipeline.core.answer.citations import (
    Citation,
    build_prompt,
    document_url,
    locator_label,
)
from rag_pipeline.core.retrieval.retriever import embed_question, retrieve
from rag_pipeline_tests.core.index_builder import TIMEOUTS_PARAGRAPH, BuiltIndex, build_index
from rag_pipeline_tests.fake_embedder import HashedEmbedder

INSTRUCTION = ("Answer the question using only the sources above. Cite every claim with the number "
               "of its source in square brackets, like [1]. Do not write links. If the sources do "
               "not contain the answer, say so and stop.")
TIMEOUTS_QUESTION = "how long before a network call times out"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, hashed_embedder: HashedEmbedder) -> BuiltIndex:
    return build_index(tmp_path_factory.mktemp("citations"), hashed_embedder)


def citation(index: int, document_name: str, section: str, quote: str) -> Citation:
    return Citation(index=index, document_id=f"{document_name}.md", document_name=document_name,
                    locator_label=locator_label(document_name, section), fragment="#char=0,1",
                    start=0, end=1, quote=quote, cosine_distance=0.5,
                    url="https://example.org/x#char=0,1", section=section)


def test_locator_label():
    assert locator_label("Configuring Frobnicator", "Timeouts") == "Configuring Frobnicator > Timeouts"
    assert locator_label("Configuring Frobnicator", "Configuring Frobnicator") == "Configuring Frobnicator"


# --- URLs ---------------------------------------------------------------------------------------


def test_document_url_with_a_base_url():
    assert document_url("/anywhere/guide/config.md", "guide/config.md", "https://docs.example.org/frob/",
                        "#char=113,203") == "https://docs.example.org/frob/guide/config.md#char=113,203"
    assert document_url("/anywhere/guide/config.md", "guide/config.md", "https://docs.example.org/frob",
                        "#page=2") == "https://docs.example.org/frob/guide/config.md#page=2"
    # The id is percent-encoded; its slashes stay.
    assert document_url("/x", "guide/a b#c.md", "https://docs.example.org", "#char=0,4") == (
        "https://docs.example.org/guide/a%20b%23c.md#char=0,4")


def test_document_url_without_a_base_url_is_the_file_uri(tmp_path: Path):
    path = tmp_path / "guide" / "a b.md"
    expected = "file://" + str(tmp_path.resolve()) + "/guide/a%20b.md#char=1,2"
    assert document_url(str(path), "guide/a b.md", None, "#char=1,2") == expected
    assert document_url(str(path), "guide/a b.md", "", "#char=1,2") == expected


def test_an_archive_members_url_is_the_archives_file(tmp_path: Path):
    # Found by a team's archives: file:///.../docs.tar.gz/docs/guide.md#char=1,2 named no file.
    (tmp_path / "docs.tar.gz").write_bytes(b"\x1f\x8b")
    member = tmp_path / "docs.tar.gz" / "docs" / "guide.md"
    assert document_url(str(member), "docs.tar.gz/docs/guide.md", None, "#char=1,2") == (
        (tmp_path / "docs.tar.gz").resolve().as_uri())
    # A corpus not on this machine (a served copy elsewhere): the path as it is.
    gone = tmp_path / "elsewhere" / "docs.tar.gz" / "guide.md"
    assert document_url(str(gone), "docs.tar.gz/guide.md", None, "#char=1,2") == (
        gone.resolve().as_uri() + "#char=1,2")


def test_an_s3_or_git_documents_url_percent_encodes_its_key_or_path():
    """Found by a user's trial: ``s3://b/p/notes#1.md#char=14,88`` parsed as the key ``p/notes``
    with a fragment, and a key holding ``%20`` as another key."""
    assert document_url("s3://url-docs/p/notes#1.md", "notes#1.md", None, "#char=14,88") == (
        "s3://url-docs/p/notes%231.md#char=14,88")
    assert document_url("s3://url-docs/p/pct%20lit.md", "pct%20lit.md", None, "") == (
        "s3://url-docs/p/pct%2520lit.md")
    commit = "0f78804" + "a" * 33
    assert document_url(f"git+file:///srv/my%20docs@{commit}:hr/a b#2.md", "hr/a b#2.md", None,
                        "#char=0,4") == (
        f"git+file:///srv/my%20docs@{commit}:hr/a%20b%232.md#char=0,4")


# --- the prompt ---------------------------------------------------------------------------------


def test_prompt_exactly():
    citations = [
        citation(1, "Configuring Frobnicator", "Timeouts", TIMEOUTS_PARAGRAPH),
        citation(2, "notes", "notes", "Release notes.\n\nVersion 2 removed the legacy XML exporter."),
    ]
    assert build_prompt(TIMEOUTS_QUESTION, citations) == (
        "Sources:\n\n"
        "[1] Configuring Frobnicator - Timeouts\n"
        f"{TIMEOUTS_PARAGRAPH}\n\n"
        "[2] notes - notes\n"
        "Release notes.\n\nVersion 2 removed the legacy XML exporter.\n\n"
        f"{INSTRUCTION}\n\n"
        f"Question: {TIMEOUTS_QUESTION}\n")


def test_a_quote_of_table_rows_comes_with_its_columns_in_the_prompt():
    from dataclasses import replace

    rows = replace(citation(1, "Travel policy", "Per diem", "Tier B (Lisbon) | €85 | €160"),
                   table_header="City tier | Per diem | Hotel cap")
    assert build_prompt("per diem in Lisbon", [rows]).startswith(
        "Sources:\n\n[1] Travel policy - Per diem\n"
        "(table columns: City tier | Per diem | Hotel cap)\nTier B (Lisbon) | €85 | €160\n\n")


def test_prompt_section_when_the_title_itself_holds_an_angle_bracket():
    title = "Input > Output"
    c = citation(1, title, "Redirection", "Use > to send output to a file.")
    assert c.locator_label == "Input > Output > Redirection"
    assert "[1] Input > Output - Redirection\n" in build_prompt("how do I redirect", [c])


# --- citations over the real index ----------------------------------------------------------------


def test_citations_quote_the_canonical_text_exactly(built: BuiltIndex, hashed_embedder: HashedEmbedder):
    index = built.index
    hits = retrieve(index, embed_question(hashed_embedder, TIMEOUTS_QUESTION), TIMEOUTS_QUESTION).hits
    citations = citations_for(index, hits, None)
    assert [c.index for c in citations] == [1, 2, 3, 4, 5]
    for c, hit in zip(citations, hits, strict=True):
        assert c.quote == built.canonical[c.document_id][c.start:c.end]
        # What was embedded is the header line, then the quote; the quote never holds the header.
        header = f"[{c.locator_label}]"
        assert index.texts[hit.row] == f"{header}\n{c.quote}"
        assert header not in c.quote
        assert not c.quote.startswith("[")
        assert c.fragment == f"#char={c.start},{c.end}"
        assert c.url == (built.corpus_dir / c.document_id).resolve().as_uri() + c.fragment
        assert c.cosine_distance == round(hit.cosine_distance, 6)


def test_first_citation_of_the_timeouts_question(built: BuiltIndex, hashed_embedder: HashedEmbedder):
    index = built.index
    hits = retrieve(index, embed_question(hashed_embedder, TIMEOUTS_QUESTION), TIMEOUTS_QUESTION).hits
    first = citations_for(index, hits, "https://docs.example.org/frob/")[0]
    assert first == Citation(
        index=1, document_id="guide/config.md", document_name="Configuring Frobnicator",
        locator_label="Configuring Frobnicator > Timeouts", fragment="#char=113,203", start=113,
        end=203, quote=TIMEOUTS_PARAGRAPH, cosine_distance=round(hits[0].cosine_distance, 6),
        # Under a base URL a Markdown page opens at a W3C text fragment of the quote.
        url="https://docs.example.org/frob/guide/config.md#:~:text=Every%20network%20call%20gives"
            "%20up%20after,unless%20the%20timeout%20key%20says%20otherwise.",
        # The planted duplicate in faq.md is named as a second location of the same quote.
        locations=("guide/config.md#char=113,203", "guide/faq.md#char=49,139"),
        section="Timeouts")
    assert built.canonical["guide/faq.md"][49:139] == TIMEOUTS_PARAGRAPH


def test_a_location_percent_encodes_a_hash_or_space_in_its_document_id(tmp_path: Path,
                                                                        hashed_embedder: HashedEmbedder):
    # Found in a re-read: "notes #2.md#char=0,90" named no place (the document's '#' read as the
    # fragment's).
    docs = {"notes #2.md": f"# Notes\n\n{TIMEOUTS_PARAGRAPH}\n",
            "100%.md": f"# All\n\n{TIMEOUTS_PARAGRAPH}\n"}
    built = build_index(tmp_path, hashed_embedder, docs)
    index = built.index
    hits = retrieve(index, embed_question(hashed_embedder, TIMEOUTS_QUESTION), TIMEOUTS_QUESTION).hits
    first = citations_for(index, hits, None)[0]
    assert sorted(first.locations) == ["100%25.md#char=7,97", "notes%20%232.md#char=9,99"]
    assert (first.document_id, first.fragment) == ("100%.md", "#char=7,97")


def test_a_markdown_quote_is_also_given_as_a_reader_sees_it(tmp_path: Path, hashed_embedder: HashedEmbedder):
    marked = TIMEOUTS_PARAGRAPH.replace("seventeen seconds", "**seventeen** seconds").replace(
        "the timeout key", "the [timeout key](config.md#timeouts)")
    built = build_index(tmp_path, hashed_embedder, {"config.md": f"# Config\n\n{marked}\n",
                                                    "notes.txt": f"Note: {marked}\n"})
    hits = retrieve(built.index, embed_question(hashed_embedder, TIMEOUTS_QUESTION), TIMEOUTS_QUESTION).hits
    shown = {c.document_id: (c.quote, c.shown_quote) for c in citations_for(built.index, hits, None)}
    assert shown["config.md"] == (marked, TIMEOUTS_PARAGRAPH)
    assert shown["notes.txt"] == (f"Note: {marked}", "")
