"""Tests for ``rag_pipeline.core.config.gold_file``: the gold and out-of-domain file formats, each
error with its exact message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_pipeline.core.config.gold_file import (
    GoldFormatError,
    GoldLine,
    OodKind,
    OodLine,
    load_gold,
    load_gold_set,
    load_ood,
)


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
    assert str(raised.value) == f"{path}:2: missing or empty ticket"


def test_empty_fields_count_as_missing_and_a_field_of_another_type_is_named(tmp_path: Path):
    row = json.dumps({"id": "q1", "needle": "   ", "question": "q?", "ticket": ""})
    path = write_lines(tmp_path / "gold.jsonl", [row])
    with pytest.raises(GoldFormatError) as raised:
        load_gold(path)
    assert str(raised.value) == f"{path}:1: missing or empty needle, ticket"
    # Found by a new user: `"id": 17` was reported as a missing id.
    for value, shown in ((17, "a number"), (None, "null"), (["d1"], "a list")):
        write_lines(path, [json.dumps({"id": value, "needle": "n", "question": "q?", "ticket": "t"})])
        with pytest.raises(GoldFormatError) as raised:
            load_gold(path)
        assert str(raised.value) == f"{path}:1: `id` must be a string, not {shown}"
    write_lines(path, [json.dumps({"id": "q1", "needle": "n", "question": "q?", "ticket": "t",
                                   "document": 3})])
    with pytest.raises(GoldFormatError) as raised:
        load_gold(path)
    assert str(raised.value) == f"{path}:1: `document` must be a string, not a number"


def test_bad_groups_name_their_line(tmp_path: Path):
    row = json.dumps({"id": "3", "needle": "n", "question": "q?", "ticket": "t", "groups": "hr"})
    path = write_lines(tmp_path / "gold.jsonl", [gold_row("1"), "", gold_row("2"), row])
    with pytest.raises(GoldFormatError) as raised:
        load_gold(path)
    assert str(raised.value) == f"{path}:4: `groups` must be a list of group names, got 'hr'"


def test_a_byte_order_mark_and_a_document_are_read(tmp_path: Path):
    """Found by a new user: a file saved as "UTF-8 with BOM" was refused with Python's advice
    to decode it with utf-8-sig."""
    path = tmp_path / "gold.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(
        {"id": "q1", "needle": "n", "question": "q?", "ticket": "t", "document": "a.md"}).encode())
    assert load_gold(path) == [GoldLine("q1", "n", "q?", "t", (), "a.md")]


def test_a_duplicate_id_names_its_line_and_the_first(tmp_path: Path):
    path = write_lines(tmp_path / "gold.jsonl", [gold_row("q2"), gold_row("q1"), gold_row("q2"),
                                                 gold_row("q3"), gold_row("q1")])
    with pytest.raises(GoldFormatError) as raised:
        load_gold(path)
    assert str(raised.value) == f"{path}:3: id 'q2' is already the id of line 1"


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
    assert str(raised.value) == f"{bad}:2: kind must be 'near' or 'off', not 'far'"


def test_ood_missing_kind(tmp_path: Path):
    path = write_lines(tmp_path / "ood.jsonl", [json.dumps({"id": "o1", "query": "q"})])
    with pytest.raises(GoldFormatError) as raised:
        load_ood(path)
    assert str(raised.value) == f"{path}:1: missing or empty kind"


def test_json_line_that_is_not_an_object(tmp_path: Path):
    path = write_lines(tmp_path / "gold.jsonl", ['["q1", "needle", "question", "ticket"]'])
    with pytest.raises(GoldFormatError, match=r":1: "):
        load_gold(path)


@pytest.mark.parametrize("header", [{"corpus": "", "documents": ["a"]},
                                    {"corpus": "x", "documents": []},
                                    {"corpus": "x", "documents": "a.md"}])
def test_a_malformed_corpus_line_is_one_error(tmp_path: Path, header: dict):
    path = write_lines(tmp_path / "gold.jsonl", [json.dumps(header), gold_row("q1")])
    with pytest.raises(GoldFormatError, match=r"gold\.jsonl:1: the corpus line must be "):
        load_gold_set(path)
