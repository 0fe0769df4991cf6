"""Tests for ``rag_pipeline.core.answer.ask`` over a tiny real index: a refusal never calls the
generator, an answer's citations slice exactly, and the prompt is built from them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rag_pipeline.core.answer.ask import (
    QUOTE_ONLY_MIN_WORDS,
    AskSettings,
    ask,
)
from rag_pipeline.core.answer.citations import build_prompt
from rag_pipeline.core.answer.generation import GenerationError, GeneratorSettings
from rag_pipeline.core.answer.question import EmptyQuestionError, QuestionTooLongError, check_question
from rag_pipeline.core.ingest.text_fragment import text_fragment
from rag_pipeline.core.retrieval.rerank import Reranker, RerankSettings
from rag_pipeline.core.retrieval.retriever import embed_question, retrieve
from rag_pipeline_tests.conftest import TINY_DOCS
from rag_pipeline_tests.core.conftest import TIMEOUT_S, FakeChatServer, chat_reply
from rag_pipeline_tests.core.index_builder import TIMEOUTS_PARAGRAPH, BuiltIndex, build_index
from rag_pipeline_tests.fake_embedder import HashedEmbedder

OFF_TOPIC = "what is the capital of france"
TIMEOUTS_QUESTION = "how long before a network call times out"
# Nothing listens on the discard port: reaching the generator raises GenerationError.
CLOSED_PORT = GeneratorSettings(base_url="http://127.0.0.1:9/v1", model="never-called", timeout_s=5)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, hashed_embedder: HashedEmbedder) -> BuiltIndex:
    return build_index(tmp_path_factory.mktemp("ask"), hashed_embedder)


def test_off_topic_question_is_refused_without_calling_the_generator(built: BuiltIndex,
                                                                     hashed_embedder: HashedEmbedder):
    embedder = hashed_embedder
    answer = ask(OFF_TOPIC, built.index, embedder, AskSettings(generator=CLOSED_PORT))
    hits = retrieve(built.index, embed_question(embedder, OFF_TOPIC), OFF_TOPIC).hits
    closest = min(h.cosine_distance for h in hits)
    assert closest >= 0.6
    assert (answer.question, answer.answered, answer.citations, answer.prompt) == (
        OFF_TOPIC, False, [], None)
    assert (answer.generated, answer.rendered_answer) == (None, None)
    assert answer.cut == 0.6
    assert answer.closest_distance == closest
    assert answer.partition == f"header|{hashed_embedder.spec.key}"
    assert answer.reason == (
        f'NO ANSWER: nothing under cosine distance 0.6 for "{OFF_TOPIC}" (closest: {closest:.3f})')
    # With the hashed stand-in the closest chunk is install.md's Upgrading paragraph at about
    # 0.675 (the real model's refusal of this question is checked through the CLI, slow tier).
    assert answer.reason.endswith("(closest: 0.675)")
    assert "generate" not in answer.timings


def test_the_closed_port_generator_really_raises_when_reached(built: BuiltIndex,
                                                              hashed_embedder: HashedEmbedder):
    # Guards the test above: with the same settings, an answered question does call the
    # generator, and that call fails loudly.
    with pytest.raises(GenerationError, match=r"^connection to http://127\.0\.0\.1:9/v1/chat/completions "
                                              r"refused: is the server running\?$"):
        ask(TIMEOUTS_QUESTION, built.index, hashed_embedder, AskSettings(generator=CLOSED_PORT))


@pytest.mark.parametrize("question", ["", "   ", " \t\n "])
def test_empty_question_is_an_error(built: BuiltIndex, hashed_embedder: HashedEmbedder, question: str):
    with pytest.raises(EmptyQuestionError, match=r"^the question is empty$"):
        ask(question, built.index, hashed_embedder)


def test_a_question_of_2000_characters_is_accepted_and_one_more_is_an_error():
    assert check_question("  " + "x" * 2000 + "\n") == "x" * 2000
    with pytest.raises(QuestionTooLongError, match=r"^the question has 2001 characters; at most 2000 "
                                                   r"are accepted$"):
        check_question("x" * 2001)


@pytest.mark.parametrize(("cut", "max_sources", "message"), [
    (-0.5, 4, r"^cut must be a finite cosine distance in \[0, 2\], got -0\.5$"),
    (2.5, 4, r"^cut must be a finite cosine distance in \[0, 2\], got 2\.5$"),
    (0.625, 0, r"^max_sources must be at least 1, got 0$"),
])
def test_ask_settings_refuse_a_cut_out_of_range_and_no_sources(cut: float, max_sources: int, message: str):
    with pytest.raises(ValueError, match=message):
        AskSettings(cut=cut, max_sources=max_sources)


def test_on_topic_question_is_answered_with_exact_quotes(built: BuiltIndex, hashed_embedder: HashedEmbedder):
    answer = ask(f"  {TIMEOUTS_QUESTION}\n", built.index, hashed_embedder)
    assert (answer.question, answer.answered, answer.reason) == (TIMEOUTS_QUESTION, True, None)
    # Only the Timeouts paragraph is under 0.6 (about 0.54 with the hashed stand-in; the next
    # distinct passage is about 0.74), and its faq.md copy is collapsed into it.
    assert len(answer.citations) == 1
    (c,) = answer.citations
    assert (c.index, c.document_id, c.locator_label, c.start, c.end, c.quote) == (
        1, "guide/config.md", "Configuring Frobnicator > Timeouts", 113, 203, TIMEOUTS_PARAGRAPH)
    assert c.quote == built.canonical["guide/config.md"][113:203]
    assert c.locations == ("guide/config.md#char=113,203", "guide/faq.md#char=49,139")
    assert c.cosine_distance < 0.6
    assert answer.closest_distance == pytest.approx(c.cosine_distance, abs=1e-6)
    assert answer.prompt == build_prompt(TIMEOUTS_QUESTION, answer.citations)
    assert answer.prompt.startswith(
        f"Sources:\n\n[1] Configuring Frobnicator - Timeouts\n{TIMEOUTS_PARAGRAPH}\n\n")
    assert "Answer the question using only the sources above." in answer.prompt
    assert answer.prompt.endswith(f"Question: {TIMEOUTS_QUESTION}\n")
    assert (answer.generated, answer.rendered_answer) == (None, None)


def test_a_looser_cut_keeps_at_most_four_sources_in_retrieval_order(built: BuiltIndex,
                                                                    hashed_embedder: HashedEmbedder):
    embedder = hashed_embedder
    hits = retrieve(built.index, embed_question(embedder, TIMEOUTS_QUESTION), TIMEOUTS_QUESTION).hits
    # All five collapsed hits are under 1.1 (the farthest is about 0.98): the cap keeps four.
    assert len(hits) == 5 and max(h.cosine_distance for h in hits) < 1.1
    answer = ask(TIMEOUTS_QUESTION, built.index, embedder,
                 AskSettings(cut=1.1, base_url="https://docs.example.org/frob"))
    assert [c.index for c in answer.citations] == [1, 2, 3, 4]
    assert [(c.document_id, c.start, c.end) for c in answer.citations] == [
        (built.index.document_ids[h.row], int(built.index.starts[h.row]), int(built.index.ends[h.row]))
        for h in hits[:4]]
    for c in answer.citations:
        assert c.quote == built.canonical[c.document_id][c.start:c.end]
        assert f"[{c.locator_label}]" not in c.quote
        # Markdown and text pages open at a W3C text fragment of the quote, not at #char=
        # (which no browser honours); the citation's fragment stays the character locator.
        assert c.fragment == f"#char={c.start},{c.end}"
        assert c.url == f"https://docs.example.org/frob/{c.document_id}" + text_fragment(
            c.quote, 0, len(c.quote), min_words=QUOTE_ONLY_MIN_WORDS)
        assert f"[{c.index}] {c.document_name} - " in answer.prompt
    timeouts = [c for c in answer.citations if c.quote == TIMEOUTS_PARAGRAPH]
    assert [c.url.partition("#")[2] for c in timeouts] == [
        ":~:text=Every%20network%20call%20gives%20up%20after,unless%20the%20timeout%20key%20says%20otherwise."]
    assert answer.cut == 1.1


def test_the_generator_gets_the_prompt_and_its_answer_is_post_checked(
        built: BuiltIndex, hashed_embedder: HashedEmbedder, chat_server: FakeChatServer):
    # The model cites a source that does not exist and writes a link of its own.
    chat_server.reply = chat_reply(
        "A call gives up after seventeen seconds [1], see https://evil.example/timeouts [3].")
    settings = AskSettings(generator=GeneratorSettings(base_url=chat_server.base_url,
                                                       model="tiny-chat", timeout_s=TIMEOUT_S))
    answer = ask(TIMEOUTS_QUESTION, built.index, hashed_embedder, settings)
    (request,) = chat_server.received
    assert json.loads(request.body)["messages"] == [{"role": "user", "content": answer.prompt}]
    assert (answer.generated.cited, answer.generated.unknown_citations,
            answer.generated.removed_urls) == ((1,), (3,), ("https://evil.example/timeouts",))
    (c,) = answer.citations
    assert answer.rendered_answer.endswith(
        f"Sources:\n[1] Configuring Frobnicator — Configuring Frobnicator > Timeouts — {c.url}")
    assert "https://evil.example" not in answer.rendered_answer
    assert "generate" in answer.timings


@pytest.mark.slow  # builds a cross-encoder with torch
def test_the_reranker_reorders_the_hybrid_shortlist_before_the_gate(
        built: BuiltIndex, hashed_embedder: HashedEmbedder, tiny_cross_encoder):
    # Random weights: this checks the plumbing (order taken from the cross-encoder, gate after).
    embedder = hashed_embedder
    reranker = Reranker(RerankSettings(model_path=tiny_cross_encoder))
    hits = retrieve(built.index, embed_question(embedder, TIMEOUTS_QUESTION), TIMEOUTS_QUESTION).hits
    order = reranker.rerank(TIMEOUTS_QUESTION, [(str(i), built.index.texts[h.row])
                                                for i, h in enumerate(hits)])
    expected = [hits[int(i)] for i, _ in order][:4]
    answer = ask(TIMEOUTS_QUESTION, built.index, embedder, AskSettings(cut=1.1), reranker)
    assert answer.reranked and "rerank" in answer.timings
    assert [(c.document_id, c.start) for c in answer.citations] == [
        (built.index.document_ids[h.row], int(built.index.starts[h.row])) for h in expected]


def test_a_pdf_table_chunk_cites_its_page_and_rows(tmp_path, hashed_embedder: HashedEmbedder):
    from rag_pipeline.core.answer.ask import _fragment_of_row
    from rag_pipeline.core.chunking.strategies import ChunkingStrategy
    from rag_pipeline.core.index.partition_build import build_partition
    from rag_pipeline.core.index.store import load_partition
    from rag_pipeline.core.ingest import extract_corpus
    from rag_pipeline.core.storage.warehouse import Warehouse
    from rag_pipeline_tests.core.ingest.pdf_fixtures import long_table_pdf

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "shifts.pdf").write_bytes(long_table_pdf())
    build_partition(Warehouse(tmp_path / "data"), extract_corpus(corpus).records,
                    ChunkingStrategy.HEADER, hashed_embedder)
    index = load_partition(tmp_path / "data", "header", hashed_embedder.spec.key)
    row = next(r for r in range(len(index.chunk_ids)) if "Delta flats 45 |" in index.contents[r])
    fragment = _fragment_of_row(index, row)
    first, last = (int(n) for n in fragment.split("&rows=")[1].split("-"))
    assert fragment.startswith("#page=2&rows=") and first <= 45 <= last
    intro = next(r for r in range(len(index.chunk_ids)) if "Who works where" in index.contents[r])
    assert _fragment_of_row(index, intro) == "#page=1"


@pytest.mark.parametrize(("fmt", "cited"), [
    ("docx", "#char="), ("html", "#char="), ("markdown", "#char="), ("pptx", "#slide=1"),
    ("odt", "#char="), ("odp", "#slide=1")])
def test_a_table_chunk_cites_its_rows_in_every_format(tmp_path, hashed_embedder: HashedEmbedder,
                                                      fmt: str, cited: str):
    from rag_pipeline.benchmarks.made_here import HEADERS, LONG_TABLE_WRITERS, table_rows
    from rag_pipeline.core.answer.ask import _fragment_of_row
    from rag_pipeline.core.chunking.strategies import ChunkingStrategy
    from rag_pipeline.core.index.partition_build import build_partition
    from rag_pipeline.core.index.store import load_partition
    from rag_pipeline.core.ingest import extract_corpus
    from rag_pipeline.core.storage.warehouse import Warehouse

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    name, data = LONG_TABLE_WRITERS[fmt](HEADERS, table_rows(60))
    (corpus / name).write_bytes(data)
    build_partition(Warehouse(tmp_path / "data"), extract_corpus(corpus).records,
                    ChunkingStrategy.HEADER, hashed_embedder)
    index = load_partition(tmp_path / "data", "header", hashed_embedder.spec.key)
    cited_rows = []
    for row in range(len(index.chunk_ids)):
        fragment = _fragment_of_row(index, row)
        assert fragment.startswith(cited)
        if "&rows=" in fragment:
            first, last = (int(n) for n in fragment.split("&rows=")[1].split("-"))
            held = [n for n in range(1, 61) if re.search(rf"Delta flats {n}\b", index.contents[row])]
            assert (first, last) == (held[0], held[-1])
            cited_rows += range(first, last + 1)
    assert cited_rows == list(range(1, 61))  # every row cited once, in order


RELEASE_DOCS = {
    "release_notes.txt": ("Release 4.8.2 (2026-02-20)\n\n"
                          "- Faster start-up of the indexer.\n- Fixed the retry of failed uploads.\n"
                          "- Build identifier: b7f3-22c9.\n"),
    "guide/config.md": TINY_DOCS["guide/config.md"],
    "guide/install.md": TINY_DOCS["guide/install.md"],
    "invoices.csv": ("Invoice,Vendor,Amount,Approver\nINV-2026-0042,Northwind,1250.00,Ana\n"
                     "INV-2026-0051,Contoso,980.00,Bo\nINV-2026-0058,Fabrikam,4100.00,Ana\n"),
}


BOXTAR_OPTIONS = [
    ("-a, --append", "Add files to the end of an existing archive."),
    ("-c, --create", "Write a new archive, replacing one of the same name."),
    ("-d, --compare", "Report the differences between the archive and the file system."),
    ("-k, --keep-old-files", "Leave existing files alone when extracting; report them as errors."),
    ("-l, --check-links", "Print a message if not all links to a file are stored."),
    ("-n, --seek", "Assume the archive can be read out of order."),
    ("-p, --preserve-permissions", "Restore the mode bits recorded in the archive."),
    ("-r, --recursion", "Descend into each directory named on the command line."),
    ("-s, --same-order", "Sort the names to extract to match the order in the archive."),
    ("-t, --list", "Print the names of the members of an archive."),
    ("-u, --update", "Store only the files newer than their copy in the archive."),
    ("-v, --verbose", "Print each file name as it is processed."),
    ("-w, --interactive", "Ask for confirmation before every action."),
    ("-x, --extract", "Write the members of an archive to the file system."),
    ("-z, --gzip", "Filter the archive through a compressor of the deflate family."),
    ("-C, --directory", "Change to the given folder before any other operation."),
    ("-N, --newer", "Store only files whose data changed after the given date."),
    ("-S, --sparse", "Handle files with holes efficiently."),
    ("-W, --verify", "Read the archive back after writing it and check it."),
    ("--one-file-system", "Stay on the local disk when creating an archive."),
    ("--remove-files", "Delete the files from disk after adding them to the archive."),
]


def test_a_question_naming_an_option_cites_the_manual_entry_holding_it_first(tmp_path: Path,
                                                                             minilm):
    # Found on real manuals: their options are listed a few to a chunk, so the chunk holding
    # --create is a blend of four entries to an embedding and was cited second, after one
    # about writing archives.
    from rag_pipeline.core.embedding.embedder import load_embedder

    embedder = load_embedder(minilm)
    entries = "\n\n".join(f"{names}\n  {meaning}" for names, meaning in BOXTAR_OPTIONS)
    built = build_index(tmp_path, embedder, {
        "boxtar.md": f"# BOXTAR(1)\n\n## NAME\n\nboxtar - an archiving utility\n\n"
                     f"## OPTIONS\n\n{entries}\n"})
    answer = ask("What does boxtar --create do?", built.index, embedder)
    first = answer.citations[0]
    assert (first.identifier, "-c, --create\n  Write a new archive" in first.quote) == (
        "--create", True)
    # The quoted answer is the entry.
    assert answer.quoted[0].text == (
        "-c, --create\n  Write a new archive, replacing one of the same name.")


def test_a_question_naming_an_identifier_is_answered_from_the_passage_holding_it(
        tmp_path: Path, minilm):
    from rag_pipeline.core.embedding.embedder import load_embedder

    embedder = load_embedder(minilm)
    built = build_index(tmp_path, embedder, RELEASE_DOCS)
    answer = ask("b7f3-22c9", built.index, embedder)
    # The passage is far from a bare code in meaning (over the cut), but holds it verbatim.
    (citation,) = [c for c in answer.citations if c.identifier]
    assert (answer.answered, citation.index, citation.document_id, citation.identifier) == (
        True, 1, "release_notes.txt", "b7f3-22c9")
    assert citation.cosine_distance > answer.cut
    # A code no passage holds is refused, however close its look-alikes of the same table.
    refused = ask("Who approved invoice INV-2026-9999?", built.index, embedder)
    assert (refused.answered, refused.citations, refused.unheld, refused.reason) == (
        False, [], ("INV-2026-9999",), 'NO ANSWER: no passage found holds "INV-2026-9999", which '
        '"Who approved invoice INV-2026-9999?" names')
    held = ask("Who approved invoice INV-2026-0051?", built.index, embedder)
    assert [(c.document_id, c.identifier) for c in held.citations][:1] == [
        ("invoices.csv", "INV-2026-0051")]
    assert held.unheld == ()
    # Beside one it holds, a record number no passage holds is named in the answer.
    both = ask("Who approved INV-2026-0051 and INV-2026-9999?", built.index, embedder)
    assert (both.answered, both.citations[0].identifier, both.unheld) == (
        True, "INV-2026-0051", ("INV-2026-9999",))
    # The quoted answer comes from the source holding the code, not the rows cited beside it.
    assert {q.citation for q in held.quoted} == {1}
    # A build one digit off the one a passage holds is answered, naming the build it lacks.
    near = ask("What was fixed in the release of build b7f3-22c0?", built.index, embedder)
    assert (near.answered, near.citations[0].document_id, near.unheld) == (
        True, "release_notes.txt", ("b7f3-22c0",))


def test_a_code_in_a_documents_title_is_held_by_its_passages(tmp_path: Path, minilm):
    """Found by a new user: a mail whose subject names the incident was no holder of its code
    (the subject is in the chunk's header, not its words), so the answer quoted a standup
    note's passing mention of the code instead of the mail's root cause."""
    from rag_pipeline.core.embedding.embedder import load_embedder

    mail = ("From: Jonas <jonas@example.com>\nTo: sre@example.com\n"
            "Subject: Re: INC-2026-038 payment gateway outage\n\n"
            "Root cause confirmed: an expired TLS certificate on the internal payment proxy.\n"
            "We renewed it at 09:42 and traffic recovered by 09:50.\n")
    docs = {"thread.eml": mail,
            "standup.txt": "Standup\nPriya: finishing the Kafka upgrade plan.\n"
                           "Jonas: incident follow-up for INC-2026-038.\n",
            "handbook.md": "# Handbook\n\nCore hours are 10:00 to 15:00.\n"}
    embedder = load_embedder(minilm)
    built = build_index(tmp_path, embedder, docs)
    answer = ask("what was the root cause of INC-2026-038 payment gateway outage", built.index,
                 embedder)
    assert [(c.document_id, c.identifier) for c in answer.citations] == [
        ("thread.eml", "INC-2026-038"), ("standup.txt", "INC-2026-038")]
    assert answer.quoted[0].text.startswith("Root cause confirmed: an expired TLS certificate")


def test_a_question_naming_a_record_quotes_what_it_asks_about_that_record(tmp_path: Path, minilm):
    """Found by a support team: asked "what was the root cause of INC-2026-050", the quoted
    answer was the postmortem's date line (its sentences were scored against the code, whose
    embedding draws the lines naming it); asked about an invoice, a ticket's row naming the
    invoice was quoted, not the invoice register's row of it."""
    from rag_pipeline.core.embedding.embedder import load_embedder

    docs = {
        "INC-2026-050.md": "# INC-2026-050: Single sign-on failing for enterprise customers\n\n"
                           "**Date:** 2026-04-02\n**Severity:** SEV2\n**Incident commander:** Priya Raman\n\n"
                           "## Root cause\n\nThe SAML signing key shared with the Okta tenant expired on "
                           "2026-04-02 at 08:00 UTC. The expiry reminder went to a mailbox of a former "
                           "employee.\n",
        "tickets.csv": "ticket_id,customer,summary\nSUP-48390,Oakridge Dental,Invoice INV-2026-0042 "
                       "shows wrong VAT rate\nSUP-48391,Nordlicht Media,Login page slow\n",
        "invoices.csv": "invoice_id,customer,vat_rate,status\nINV-2026-0041,Nordlicht Media,19%,paid\n"
                        "INV-2026-0042,Oakridge Dental,21% (corrected from 19%),paid\n",
    }
    embedder = load_embedder(minilm)
    built = build_index(tmp_path, embedder, docs)
    cause = ask("what was the root cause of INC-2026-050", built.index, embedder)
    assert cause.quoted[0].text == ("The SAML signing key shared with the Okta tenant expired on "
                                    "2026-04-02 at 08:00 UTC.")
    vat = ask("what is the VAT rate on INV-2026-0042", built.index, embedder)
    assert [(vat.citations[q.citation - 1].document_id, q.text) for q in vat.quoted] == [
        ("invoices.csv", "invoice_id: INV-2026-0042 | customer: Oakridge Dental | "
                         "vat_rate: 21% (corrected from 19%) | status: paid")]
