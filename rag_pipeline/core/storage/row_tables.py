"""Frozen dataclasses to Arrow tables and back, by field name, under an explicit schema.

A table's schema is written once, next to the dataclass its rows come from; every column whose
name is a field of the dataclass is read from that field, and the few computed columns (a
length, a flattened mapping, a renamed field) are named with a function of the row. Enum
members are stored as their values and tuples as lists; reading back turns lists into tuples.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import Any, TypeVar

import pyarrow as pa

T = TypeVar("T")


def _cell(value: object) -> object:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return [_cell(v) for v in value]
    return value


def rows_table(rows: Sequence[object], schema: pa.Schema,
               computed: Mapping[str, Callable[[Any], object]] | None = None) -> pa.Table:
    """The rows as a table of exactly ``schema``.

    Args:
        rows: dataclass instances, one per table row.
        schema: the table's columns and types, in order.
        computed: for columns that are not a field of the rows' class, how to compute the
            cell from a row (a column named here wins over a field of the same name).

    Raises:
        AttributeError: a schema column is neither computed nor a field of the rows.
    """
    computed = computed or {}
    columns = {}
    for column in schema.names:
        value_of = computed.get(column)
        if value_of is None:
            columns[column] = [_cell(getattr(row, column)) for row in rows]
        else:
            columns[column] = [_cell(value_of(row)) for row in rows]
    return pa.Table.from_pydict(columns, schema=schema)


def table_rows(table: pa.Table, cls: type[T]) -> list[T]:
    """The table's rows as ``cls`` instances: every field of ``cls`` that is a column is
    read from it (lists become tuples), columns that are not fields are ignored, and fields
    without a column take their defaults."""
    names = [f.name for f in dataclasses.fields(cls) if f.name in table.column_names]
    out = []
    for row in table.select(names).to_pylist():
        out.append(cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in row.items()}))
    return out
