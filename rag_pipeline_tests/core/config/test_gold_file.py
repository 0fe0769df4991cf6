"""Tests for ``rag_pipeline.core.config.gold_file``: the gold and out-of-domain file formats, each
error with its exact message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_pipeline.core.config.gold_file import (
    GoldFormatError,
    GoldLine,
    GoldSet,
    OodKind,
    OodLine,
    check_apart,
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


# --- mistakes a team makes writing its own set (found by a team lead's gold set) ---------------


def _refusal(path: Path, load=load_gold) -> str:
    with pytest.raises(GoldFormatError) as raised:
        load(path)
    return str(raised.value)


def test_a_misspelt_field_is_refused_and_fields_of_ones_own_pass(tmp_path: Path):
    # "documnet" passed silently, and the check that the needle is in the document was off.
    row = json.loads(gold_row("g1"))
    misspelt = write_lines(tmp_path / "a.jsonl", [json.dumps({**row, "documnet": "a.md"})])
    assert _refusal(misspelt) == (f"{misspelt}:1: unknown field `documnet`: did you mean "
                                  "`document`? (a field of your own starts with `_`)")
    strange = write_lines(tmp_path / "b.jsonl", [json.dumps({**row, "zzz": 1})])
    assert _refusal(strange) == (
        f"{strange}:1: unknown field `zzz`: a line holds id, needle, question, ticket, document, "
        "groups, shown_sources, comments (a field of your own starts with `_`)")
    own = write_lines(tmp_path / "c.jsonl", [json.dumps({**row, "_note": "from the wiki",
                                                         "comments": ["too long"]})])
    assert load_gold(own) == [GoldLine("g1", "a needle", "a question?", "a ticket")]


def test_a_corpus_line_after_the_first_and_a_repeated_question_are_refused(tmp_path: Path):
    corpus = json.dumps({"corpus": "team", "documents": ["a.md"]})
    late = write_lines(tmp_path / "late.jsonl", [gold_row("g1"), corpus])
    assert _refusal(late) == f"{late}:2: a corpus line must be the file's first line"
    twice = write_lines(tmp_path / "twice.jsonl", [
        gold_row("g1", "one", "Where is it?"), gold_row("g2", "two", "where  is IT?")])
    assert _refusal(twice) == (f"{twice}:2: the same question as line 1: two answers to one "
                               "question score one of them as missed")
    ood = write_lines(tmp_path / "ood.jsonl", [
        json.dumps({"id": "o1", "query": "Lunch menu?", "kind": "off"}),
        json.dumps({"id": "o2", "query": "lunch menu?", "kind": "near"})])
    assert _refusal(ood, load_ood) == f"{ood}:2: the same query as line 1"


def test_a_file_not_utf8_missing_or_too_large_is_refused_naming_it(tmp_path: Path, monkeypatch):
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes((gold_row("g1") + "\n").encode() + json.dumps(
        {"id": "g2", "needle": "caf\xe9", "question": "q2", "ticket": "t"},
        ensure_ascii=False).encode("latin-1"))
    assert _refusal(latin) == f"{latin}:2: not UTF-8 (byte 0xe9): save the file as UTF-8"
    wide = tmp_path / "wide.jsonl"
    wide.write_bytes(gold_row("g1").encode("utf-16"))
    assert _refusal(wide) == f"{wide}:1: the file is UTF-16: save it as UTF-8"
    assert _refusal(tmp_path / "none.jsonl") == f"{tmp_path / 'none.jsonl'}: no such file"
    from rag_pipeline.core.text import jsonl

    monkeypatch.setattr(jsonl, "MAX_JSONL_BYTES", 10)
    big = write_lines(tmp_path / "big.jsonl", [gold_row("g1")])
    assert _refusal(big) == (f"{big}: {big.stat().st_size:,} bytes, over the limit of 10 for a "
                             "JSONL file here")


def test_an_empty_out_of_domain_file_is_noted_as_a_missing_one_is(tmp_path: Path):
    from rag_pipeline.core.config.gold_file import no_ood_note

    empty = tmp_path / "ood.jsonl"
    empty.write_text("\n", encoding="utf-8")
    assert no_ood_note(empty).startswith(f"no out-of-domain questions ({empty} is empty): ")
    assert no_ood_note(tmp_path / "x.jsonl").startswith(
        f"no out-of-domain questions ({tmp_path / 'x.jsonl'} does not exist): ")
    empty.write_text(json.dumps({"id": "o1", "query": "q", "kind": "off"}) + "\n", encoding="utf-8")
    assert no_ood_note(empty) is None


def test_an_out_of_domain_question_a_gold_line_asks_is_refused(tmp_path: Path):
    # Found by a team lead: the same question stood in both files, so it was scored both as
    # answerable and as one to refuse.
    gold = GoldSet(tmp_path / "gold.jsonl", None,
                   (GoldLine("g1", "n", "Where is the VPN guide?", "vpn broken??"),))
    check_apart(gold, [OodLine("o1", "What is for lunch?", OodKind.OFF)], tmp_path / "ood.jsonl")
    with pytest.raises(GoldFormatError) as raised:
        check_apart(gold, [OodLine("o2", "VPN  broken??", OodKind.NEAR)], tmp_path / "ood.jsonl")
    assert str(raised.value) == (
        f"{tmp_path / 'ood.jsonl'}: out-of-domain question 'o2' is asked by gold line 'g1' of "
        f"{tmp_path / 'gold.jsonl'}: a question cannot be both answered from the documents and not")
