"""Tests for ``rag_pipeline.core.gold``: file format errors with their exact messages, needle
validation on planted cases, and the project's real gold and out-of-domain files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_pipeline.core.corpus_export import export_python_reference
from rag_pipeline.core.gold import (
    GoldError,
    GoldFormatError,
    GoldLine,
    GoldQuery,
    OodKind,
    OodLine,
    QueryStyle,
    collapse,
    load_gold,
    load_ood,
    validate_gold,
)
from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.project_paths import DEFAULT_EVAL_DIR


def gold_row(id_: str, needle: str = "a needle", question: str = "a question?",
             ticket: str = "a ticket") -> str:
    return json.dumps({"id": id_, "needle": needle, "question": question, "ticket": ticket})


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- file format ------------------------------------------------------------------------------


def test_load_gold_reads_lines_and_skips_blank_ones(tmp_path: Path):
    path = write_lines(tmp_path / "gold.jsonl", [gold_row("q1", "n1", "Q1?", "t1"), "", "   ",
                                                 gold_row("q2", "n2", "Q2?", "t2")])
    assert load_gold(path) == [GoldLine("q1", "n1", "Q1?", "t1"), GoldLine("q2", "n2", "Q2?", "t2")]


def test_bad_json_names_file_and_line(tmp_path: Path):
    # Line 2 is blank (still counted), line 3 is cut short.
    path = write_lines(tmp_path / "gold.jsonl", [gold_row("q1"), "", '{"id": "q2", '])
    with pytest.raises(GoldFormatError) as raised:
        load_gold(path)
    assert str(raised.value) == f"{path}:3: not JSON: Expecting property name enclosed in double quotes"


def test_not_json_at_all(tmp_path: Path):
    path = write_lines(tmp_path / "ood.jsonl", ["what is this"])
    with pytest.raises(GoldFormatError) as raised:
        load_ood(path)
    assert str(raised.value) == f"{path}:1: not JSON: Expecting value"


def test_missing_field(tmp_path: Path):
    row = json.dumps({"id": "q1", "needle": "n", "question": "q?"})
    path = write_lines(tmp_path / "gold.jsonl", [gold_row("q0"), row])
    with pytest.raises(GoldFormatError) as raised:
        load_gold(path)
    assert str(raised.value) == f"{path}:2: missing or empty ['ticket']"


def test_empty_and_non_string_fields_count_as_missing(tmp_path: Path):
    row = json.dumps({"id": 7, "needle": "   ", "question": "q?", "ticket": "t"})
    path = write_lines(tmp_path / "gold.jsonl", [row])
    with pytest.raises(GoldFormatError) as raised:
        load_gold(path)
    assert str(raised.value) == f"{path}:1: missing or empty ['id', 'needle']"


def test_duplicate_ids(tmp_path: Path):
    path = write_lines(tmp_path / "gold.jsonl", [gold_row("q2"), gold_row("q1"), gold_row("q2"),
                                                 gold_row("q3"), gold_row("q1")])
    with pytest.raises(GoldFormatError) as raised:
        load_gold(path)
    assert str(raised.value) == f"{path}: duplicate ids ['q1', 'q2']"


def test_load_ood_and_a_bad_kind(tmp_path: Path):
    good = write_lines(tmp_path / "ood.jsonl", [
        json.dumps({"id": "o1", "query": "how do I use pip", "kind": "near"}),
        json.dumps({"id": "o2", "query": "capital of France", "kind": "off"})])
    assert load_ood(good) == [OodLine("o1", "how do I use pip", OodKind.NEAR),
                              OodLine("o2", "capital of France", OodKind.OFF)]
    bad = write_lines(tmp_path / "bad.jsonl", [
        json.dumps({"id": "o1", "query": "q", "kind": "near"}),
        json.dumps({"id": "o2", "query": "q", "kind": "far"}),
        json.dumps({"id": "o3", "query": "q", "kind": "OFF"})])
    with pytest.raises(GoldFormatError) as raised:
        load_ood(bad)
    assert str(raised.value) == f"{bad}: kind must be 'near' or 'off' for ['o2', 'o3']"


def test_ood_missing_kind(tmp_path: Path):
    path = write_lines(tmp_path / "ood.jsonl", [json.dumps({"id": "o1", "query": "q"})])
    with pytest.raises(GoldFormatError) as raised:
        load_ood(path)
    assert str(raised.value) == f"{path}:1: missing or empty ['kind']"


def test_json_line_that_is_not_an_object(tmp_path: Path):
    path = write_lines(tmp_path / "gold.jsonl", ['["q1", "needle", "question", "ticket"]'])
    with pytest.raises(GoldFormatError, match=r":1: "):
        load_gold(path)


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
        GoldError("q3", "needle not found in the corpus"),
        GoldError("q4", "needle is a heading"),
    ]
    assert [q.query_id for q in queries] == ["q1/question", "q1/ticket", "q5/question", "q5/ticket"]
    assert queries[2].needle == "A request is retried three times before it fails."


def test_needle_repeated_inside_one_document_counts_every_time():
    corpus = {"d.md": "Retry later. Retry later.\n\nRetry later.\n"}
    _, errors = validate_gold([line("q1", "Retry later.")], corpus)
    assert errors == [GoldError("q1", "needle found 3 times in the corpus, not once")]


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
