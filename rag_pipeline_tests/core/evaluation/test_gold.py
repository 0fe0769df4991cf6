"""Tests for ``rag_pipeline.core.evaluation.gold``: needle validation on planted cases, the corpus
check, drafting, and the project's real gold and out-of-domain files (the file format's errors
are tested in ``core/config/test_gold_file.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_pipeline.core.config.gold_file import (
    GoldCorpus,
    GoldFormatError,
    GoldLine,
    OodKind,
    OodLine,
    load_gold,
    load_gold_set,
    load_ood,
)
from rag_pipeline.core.evaluation.gold import (
    DraftNeedle,
    GoldError,
    GoldQuery,
    NoGoldSetError,
    QueryStyle,
    check_corpus,
    collapse,
    draft_jsonl,
    draft_needles,
    validate_gold,
)
from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.ingest.corpus_export import export_python_reference
from rag_pipeline.project_paths import DEFAULT_EVAL_DIR
from rag_pipeline_tests.core.config.test_gold_file import gold_row, write_lines

# --- needle validation ----------------------------------------------------------------------------

CORPUS = {
    "a.md": (
        "# Alpha\n\n"
        "The cache is flushed every ten minutes.\n\n"
        "## Retries\n\n"
        "A request is retried three times\n"
        "before it fails.\n"),
    "b.md": (
        "# Beta\n\n"
        "See the log.\n\n"
        "## Shared settings\n\n"
        "Settings live in one file.\n"),
    "c.txt": "Notes.\n\nSee the log.\n",
}


NOT_FOUND = ("needle not found in the corpus; needles match the extracted text, as the chunks' "
             "`content` holds it (a CSV or sheet row reads `column: value | column: value`)")
"""What a needle copied from a CSV file as it is written (``a,b,c``) is told."""


def line(id_: str, needle: str) -> GoldLine:
    return GoldLine(id_, needle, f"question {id_}?", f"ticket {id_}")


def test_needle_found_once_yields_two_queries():
    queries, errors = validate_gold([line("q1", "The cache is flushed every ten minutes.")], CORPUS)
    assert errors == []
    assert queries == [
        GoldQuery("q1/question", "q1", QueryStyle.QUESTION, "question q1?",
                  "The cache is flushed every ten minutes."),
        GoldQuery("q1/ticket", "q1", QueryStyle.TICKET, "ticket q1",
                  "The cache is flushed every ten minutes."),
    ]


def test_planted_needles_each_trip_their_check():
    lines = [
        line("q1", "The cache is flushed every ten minutes."),  # once: scored
        line("q2", "See the log."),  # in b.md and c.txt: must trip "found 2 times"
        line("q3", "The cache is never flushed."),  # nowhere: must trip "not found"
        line("q4", "Shared settings"),  # only the "## Shared settings" line: "is a heading"
        # Across a line break, with its own stray white space: must match once collapsed.
        line("q5", "A request is  retried three times before\tit fails."),
    ]
    queries, errors = validate_gold(lines, CORPUS)
    assert errors == [
        GoldError("q2", "needle found 2 times in the corpus, not once"),
        GoldError("q3", NOT_FOUND),
        GoldError("q4", "needle is a heading"),
    ]
    assert [q.query_id for q in queries] == ["q1/question", "q1/ticket", "q5/question", "q5/ticket"]
    assert queries[2].needle == "A request is retried three times before it fails."


def test_a_repeated_needle_and_a_wrong_document_are_errors_of_their_lines():
    """Found by a new user: a line copied under a new id was scored twice (narrowing every
    interval), and a line's `document` naming no indexed document was never read."""
    needle = "The cache is flushed every ten minutes."
    lines = [GoldLine("q1", needle, "when is the cache flushed?", "stale cache"),
             GoldLine("copy", needle, "when is the cache flushed?", "stale cache"),
             GoldLine("q2", "Settings live in one file.", "where?", "no settings", (), "b.md"),
             GoldLine("q3", "A request is retried three times before it fails.", "retries?",
                      "it gave up", (), "notes/missing.md"),
             GoldLine("q4", "Settings live in one file.  ", "where?", "no settings", (), "a.md"),
             GoldLine("q5", "Notes.", "notes?", "notes", (), "a.md")]
    queries, errors = validate_gold(lines, CORPUS)
    assert errors == [
        GoldError("copy", "the same needle as line 'q1': a passage is scored once"),
        GoldError("q3", "its document 'notes/missing.md' is not among the indexed documents"),
        GoldError("q4", "the same needle as line 'q2': a passage is scored once"),
        GoldError("q5", "needle is not in its document 'a.md' (it is in 'c.txt')")]
    assert [q.query_id for q in queries] == ["q1/question", "q1/ticket", "q2/question",
                                             "q2/ticket"]
    # A line that failed takes no needle: the right line after it is scored (found by an
    # attack on the check above).
    wrong, right = (GoldLine(i, needle, "when?", "stale", (), doc)
                    for i, doc in (("g1", "b.md"), ("g2", "a.md")))
    queries, errors = validate_gold([wrong, right], CORPUS)
    assert errors == [GoldError("g1", "needle is not in its document 'b.md' (it is in 'a.md')")]
    assert [q.query_id for q in queries] == ["g2/question", "g2/ticket"]


def test_needle_repeated_inside_one_document_counts_every_time():
    corpus = {"d.md": "Retry later. Retry later.\n\nRetry later.\n"}
    _, errors = validate_gold([line("q1", "Retry later.")], corpus)
    assert errors == [GoldError("q1", "needle found 3 times in the corpus, not once")]


def test_the_front_matter_is_not_searched_for_needles():
    # Found by a review: the front matter, kept in the canonical text for its offsets, made a
    # needle its description: repeats occur twice, and a needle only there occur once.
    corpus = {"k.md": "---\ndescription: Keys rotate every 90 days.\n---\n# Keys\n\n"
                      "Keys rotate every 90 days.\n"}
    queries, errors = validate_gold([line("q1", "Keys rotate every 90 days."),
                                     line("q2", "description: Keys rotate")], corpus)
    assert (errors, [q.query_id for q in queries]) == (
        [GoldError("q2", NOT_FOUND)], ["q1/question", "q1/ticket"])


def test_needle_holding_heading_words_in_body_text_is_kept():
    # "Retries" is the heading of r.md and also the first word of its body line.
    corpus = {"r.md": "# Retries\n\nRetries happen twice.\n"}
    queries, errors = validate_gold([line("q1", "Retries happen twice.")], corpus)
    assert (errors, [q.query_id for q in queries]) == ([], ["q1/question", "q1/ticket"])


def test_needle_that_is_a_comment_in_a_code_block_is_not_a_heading():
    # The chunker's heading_spans skips fenced code: "# add up the prices" is a Python comment
    # inside chunk content, so the needle is body text that a chunk holds whole.
    corpus = {"code.md": ("# Loops\n\nAn example:\n\n"
                          "```python\n# add up the prices\ntotal = sum(prices)\n```\n")}
    queries, errors = validate_gold([line("q1", "# add up the prices")], corpus)
    assert (errors, [q.query_id for q in queries]) == ([], ["q1/question", "q1/ticket"])


def test_collapse():
    assert collapse("  a\n\n b\t c  ") == "a b c"


# --- the project's gold files -----------------------------------------------------------------------

GOLD_LINES = 122
GOLD_TOPICS = 57
OOD_NEAR, OOD_OFF = 40, 20


@pytest.fixture(scope="module")
def bundled_canonical_texts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The canonical text of every document of the bundled corpus, as the pipeline extracts it."""
    corpus = tmp_path_factory.mktemp("python-reference")
    export_python_reference(corpus)
    return {r.document_id: r.canonical_text for r in extract_corpus(corpus).records}


def test_real_gold_file_loads():
    lines = load_gold(DEFAULT_EVAL_DIR / "gold.jsonl")
    assert [g.id for g in lines] == [f"q{n:02d}" for n in range(1, GOLD_LINES + 1)]
    assert len({g.needle for g in lines}) == GOLD_LINES
    assert lines[0] == GoldLine(
        "q01",
        "The current code generator emits no code for an assert statement when optimization is "
        "requested at compile time.",
        "What does the assert statement do when optimization is requested at compile time?",
        "my asserts seem to vanish when i run python with -O, is that a bug??")


def test_real_ood_file_loads():
    lines = load_ood(DEFAULT_EVAL_DIR / "ood.jsonl")
    assert [o.id for o in lines] == [f"o{n:02d}" for n in range(1, OOD_NEAR + OOD_OFF + 1)]
    assert len({o.query for o in lines}) == OOD_NEAR + OOD_OFF
    assert sum(o.kind is OodKind.NEAR for o in lines) == OOD_NEAR
    assert sum(o.kind is OodKind.OFF for o in lines) == OOD_OFF
    assert lines[2] == OodLine("o03", "What is the capital of France?", OodKind.OFF)


def test_real_gold_file_has_no_errors_over_the_bundled_corpus(bundled_canonical_texts):
    queries, errors = validate_gold(load_gold(DEFAULT_EVAL_DIR / "gold.jsonl"),
                                    bundled_canonical_texts)
    assert errors == []
    assert len(queries) == 2 * GOLD_LINES
    assert sum(q.style is QueryStyle.QUESTION for q in queries) == GOLD_LINES
    assert sum(q.style is QueryStyle.TICKET for q in queries) == GOLD_LINES
    collapsed = [collapse(text) for text in bundled_canonical_texts.values()]
    topics = {i for q in queries for i, text in enumerate(collapsed) if q.needle in text}
    assert (len(bundled_canonical_texts), len(topics)) == (79, GOLD_TOPICS)


# --- the corpus a gold set was written for ----------------------------------------------------

def test_the_corpus_line_is_read_and_a_corpus_without_its_documents_is_refused(tmp_path: Path):
    header = json.dumps({"corpus": "team", "documents": ["b.md", "a.md", "a.md"]})
    path = write_lines(tmp_path / "gold.jsonl", [header, gold_row("q1")])
    gold = load_gold_set(path)
    assert (gold.corpus, gold.lines) == (GoldCorpus("team", ("a.md", "b.md")),
                                         (GoldLine("q1", "a needle", "a question?", "a ticket"),))
    check_corpus(gold, ["a.md", "b.md", "c.md"])
    with pytest.raises(NoGoldSetError) as info:
        check_corpus(gold, ["a.md", "c.md"])
    assert str(info.value) == (
        f"no gold set for this corpus: {path} was written for corpus 'team', and 1 of its 2 "
        "documents (first: 'b.md') are not in the index; nothing to score. If the set is this "
        "corpus's, correct those ids in its first line (or index the documents); else write one "
        "with `rag-pipeline gold draft`, then `rag-pipeline eval --gold FILE`")
    # Found by a new team: every index of its folder ended with the bundled set's 57 missing
    # documents, the first one named, as if one were missing by mistake.
    with pytest.raises(NoGoldSetError) as info:
        check_corpus(gold, ["c.md"])
    assert str(info.value) == (
        f"no gold set for this corpus: {path} is the gold set of corpus 'team', none of whose 2 "
        "documents is in the index; nothing to score. Write one with `rag-pipeline gold draft --output "
        "gold.jsonl`, then `rag-pipeline eval --gold gold.jsonl` (or set RAG_PIPELINE_EVAL_DIR "
        "to its folder: `index` then scores it)")
    # A set without a corpus line is checked against any corpus, as before.
    check_corpus(load_gold_set(write_lines(tmp_path / "old.jsonl", [gold_row("q1")])), [])
    # A set of its corpus line alone scores nothing, and says so (found by an attack: `eval`
    # printed figures of 0 queries, and `index` replaced the evaluation with empty tables).
    bare = write_lines(tmp_path / "bare.jsonl", [header])
    with pytest.raises(NoGoldSetError) as info:
        check_corpus(load_gold_set(bare), ["a.md", "b.md"])
    assert str(info.value) == (
        f"no gold set for this corpus: {bare} holds no gold line (only its corpus line); nothing "
        "to score. Fill in the lines `rag-pipeline gold draft` wrote, or write some")


def test_the_bundled_gold_set_names_57_documents_of_the_python_reference():
    gold = load_gold_set(DEFAULT_EVAL_DIR / "gold.jsonl")
    assert (gold.corpus.name, len(gold.corpus.documents), len(gold.lines)) == (
        "python-reference", 57, 122)
    assert gold.corpus.documents[:3] == ("assert.md", "assignment.md", "atom-identifiers.md")


def test_a_draft_of_fewer_needles_than_documents_samples_every_folder():
    # Found by a new user: 40 needles of 188 files came from the alphabetically first 3 of 11
    # folders (and, spread over the names alone, from the largest folders only).
    texts = {f"{folder}/doc{n}.md": f"The {folder} folder holds document number {n} of this "
                                     f"team corpus today.\n"
             for folder, count in (("apt", 1), ("bash", 6), ("sed", 1)) for n in range(1, count + 1)}
    assert [needle.document for needle in draft_needles(texts, 3)] == [
        "apt/doc1.md", "bash/doc4.md", "sed/doc1.md"]


def test_draft_proposes_body_sentences_found_once_round_robin_over_documents(tmp_path: Path):
    texts = {
        "b.md": "# A heading that is long enough to be a sentence of eight words.\n\n"
                "Shared words appear in both documents and so are never a needle here.\n\n"
                "The second document explains the unique widget setting in detail today.\n",
        "a.md": "Shared words appear in both documents and so are never a needle here.\n\n"
                "Too short here.\n\n"
                "The first document says the timeout is seventeen seconds unless configured.\n\n"
                "A second sentence of the first document is also unique and long enough.\n",
    }
    needles = draft_needles(texts, 5)
    # Not the heading, not the shared sentence (twice), not the short one; the documents in an
    # order spread over their ids (the middle one first: b.md, then a.md).
    assert needles == [
        DraftNeedle("d001", "b.md", "The second document explains the unique widget setting in "
                                    "detail today."),
        DraftNeedle("d002", "a.md", "The first document says the timeout is seventeen seconds "
                                    "unless configured."),
        DraftNeedle("d003", "a.md", "A second sentence of the first document is also unique and "
                                    "long enough.")]
    assert draft_needles(texts, 1) == needles[:1]
    draft = write_lines(tmp_path / "draft.jsonl", draft_jsonl("team", needles).splitlines())
    assert json.loads(draft.read_text().splitlines()[0]) == {"corpus": "team",
                                                             "documents": ["a.md", "b.md"]}
    # The draft is refused until the user writes the questions (the check eval applies).
    with pytest.raises(GoldFormatError, match=r"draft\.jsonl:2: missing or empty "
                                              r"question, ticket$"):
        load_gold_set(draft)
    filled = [line.replace('"question": ""', f'"question": "q{n}?"').replace('"ticket": ""', '"ticket": "t"')
              for n, line in enumerate(draft.read_text().splitlines())]
    gold = load_gold_set(write_lines(tmp_path / "filled.jsonl", filled))
    queries, errors = validate_gold(gold.lines, texts)
    assert (len(queries), errors) == (6, [])


def test_draft_skips_code_comments_and_tables():
    texts = {"a.md": "/* Acts like puts with the file given at time of enclosure. */\n\n"
                     "| col | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11 | 12 |.\n\n"
                     "The closure example writes every message to the file it was given.\n"}
    assert [n.needle for n in draft_needles(texts, 5)] == [
        "The closure example writes every message to the file it was given."]


def test_a_plain_text_line_over_dashes_is_no_heading_for_the_gold_check():
    """Found by an attack: with Markdown's underlined headings, a needle on a text file's line
    over a row of dashes was refused as a heading, though that file's chunks hold it."""
    needle = "The backup job runs every night at two and keeps a week of copies"
    texts = {"notes.txt": f"{needle}\n------------------------------------------\n\nMore.\n"}
    queries, errors = validate_gold([line("q1", needle)], texts)
    assert ([q.line_id for q in queries], errors) == (["q1", "q1"], [])  # question and ticket


def test_a_markdown_files_underlined_title_is_a_heading_for_the_gold_check():
    """Found by an attack: an underlined FAQ question of a Markdown file was drafted and
    accepted as a needle, though it is in no chunk."""
    needle = "Why does the daemon refuse to start again after an upgrade"
    texts = {"faq.md": f"{needle}\n---\n\nRemove the stale lock file first.\n"}
    queries, errors = validate_gold([line("q1", needle)], texts)
    assert (queries, [e.reason for e in errors]) == ([], ["needle is a heading"])


def test_an_html_or_manual_page_heading_is_a_heading_for_the_gold_check_and_the_draft(tmp_path: Path):
    """Found by a new user measuring their own documents: an HTML page's ``<h2>`` and a manual
    page's ``.SH`` were scored as needles (in no chunk, so counted destroyed by chunking): only
    Markdown's headings were known. The extractor's sections say where any format's are."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "guide.html").write_text(
        "<html><body><h1>Guide</h1><h2>Chapter two covers users and groups of the system</h2>"
        "<p>Each user belongs to one primary group and to any number of others.</p>"
        "</body></html>", encoding="utf-8")
    (corpus / "tool.1").write_text(
        ".TH TOOL 1\n.SH ADVANCED USAGE OF THE TOOL FOR LARGE FILES AND MANY DIRECTORIES\n"
        "The tool reads its input in blocks of a megabyte and never holds more.\n",
        encoding="utf-8")
    records = extract_corpus(corpus).records
    texts = {r.document_id: r.canonical_text for r in records}
    sections = {r.document_id: list(r.sections) for r in records}
    headings = [line("h2", "Chapter two covers users and groups of the system"),
                line("sh", "ADVANCED USAGE OF THE TOOL FOR LARGE FILES AND MANY DIRECTORIES")]
    bodies = [line("p", "Each user belongs to one primary group and to any number of others."),
              line("b", "The tool reads its input in blocks of a megabyte and never holds more.")]
    queries, errors = validate_gold([*headings, *bodies], texts, sections)
    assert ([e.reason for e in errors], sorted({q.line_id for q in queries})) == (
        ["needle is a heading", "needle is a heading"], ["b", "p"])
    # Without the sections (a caller with the text alone) the headings were scored.
    assert validate_gold(headings, texts)[1] == []
    assert {n.needle for n in draft_needles(texts, 10, sections=sections)} == {
        "Each user belongs to one primary group and to any number of others.",
        "The tool reads its input in blocks of a megabyte and never holds more."}
