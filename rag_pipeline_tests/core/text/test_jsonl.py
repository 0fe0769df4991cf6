"""``jsonl_objects`` and ``missing_fields``: numbered objects, one-line errors naming the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_pipeline.core.text.jsonl import jsonl_objects, missing_fields


class PlantedError(ValueError):
    pass


def test_objects_come_with_their_line_numbers_and_blank_lines_are_passed_over(tmp_path: Path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"id": "a"}\n\n   \n{"id": "b", "n": 2}\n', encoding="utf-8")
    assert list(jsonl_objects(path, PlantedError)) == [(1, {"id": "a"}), (4, {"id": "b", "n": 2})]


@pytest.mark.parametrize(("line", "why"), [
    # Planted flaw: a line cut short must trip the JSON decode, naming the decoder's reason.
    ('{"id": "a"', "not JSON: Expecting ',' delimiter"),
    # Planted flaw: valid JSON that is no object must trip the isinstance check.
    ('["a", "b"]', "a line must be a JSON object, not list"),
    ('"a"', "a line must be a JSON object, not str"),
])
def test_a_bad_line_is_the_callers_error_naming_file_line_and_why(tmp_path: Path, line: str, why: str):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"id": "ok"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(PlantedError) as raised:
        list(jsonl_objects(path, PlantedError))
    assert str(raised.value) == f"{path}:2: {why}"


@pytest.mark.parametrize("line", ['{"id": "a"', '["a"]'])
def test_with_expected_every_bad_line_says_what_a_line_must_be(tmp_path: Path, line: str):
    path = tmp_path / "rows.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(PlantedError) as raised:
        list(jsonl_objects(path, PlantedError, 'a line must be {"text": "..."}'))
    assert str(raised.value) == f'{path}:1: a line must be {{"text": "..."}}'


def test_missing_fields_are_absent_non_string_or_white_space_in_the_required_order():
    row = {"id": "q1", "needle": "  ", "question": 3, "ticket": "t"}
    assert missing_fields(row, ("kind", "id", "needle", "question", "ticket")) == [
        "kind", "needle", "question"]
    assert missing_fields(row, ("id", "ticket")) == []
