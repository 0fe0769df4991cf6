"""Dataclasses to Arrow tables and back: exact columns, types and values."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import pyarrow as pa
import pytest

from rag_pipeline.core.storage.row_tables import rows_table, table_rows


class Colour(StrEnum):
    RED = "red"


@dataclass(frozen=True)
class Row:
    name: str
    colour: Colour
    rank: int | None
    starts: tuple[int, ...] = ()


SCHEMA = pa.schema([("name", pa.string()), ("colour", pa.string()), ("rank", pa.int32()),
                    ("starts", pa.list_(pa.int64())), ("name_length", pa.int64())])


def test_rows_table_reads_fields_by_name_and_computes_the_rest():
    table = rows_table([Row("ab", Colour.RED, 3, (0, 5)), Row("c", Colour.RED, None)], SCHEMA,
                       computed={"name_length": lambda r: len(r.name)})
    assert table.schema.equals(SCHEMA)
    assert table.to_pylist() == [
        {"name": "ab", "colour": "red", "rank": 3, "starts": [0, 5], "name_length": 2},
        {"name": "c", "colour": "red", "rank": None, "starts": [], "name_length": 1}]


def test_empty_rows_keep_the_schema():
    assert rows_table([], SCHEMA, computed={"name_length": len}).schema.equals(SCHEMA)


def test_a_column_that_is_neither_field_nor_computed_is_an_error():
    with pytest.raises(AttributeError, match="name_length"):
        rows_table([Row("ab", Colour.RED, 3)], SCHEMA)


def test_table_rows_round_trips_and_ignores_columns_that_are_not_fields():
    rows = [Row("ab", "red", 3, (0, 5)), Row("c", "red", None)]
    table = rows_table(rows, SCHEMA, computed={"name_length": lambda r: len(r.name)})
    assert table_rows(table, Row) == rows
    assert table_rows(table.drop_columns(["starts"]), Row)[0].starts == ()
