"""Materialisation metadata in Dagster's standard keys, so asset pages show rows and columns."""

from __future__ import annotations

import dagster as dg
import pyarrow as pa

from rag_pipeline.core.warehouse import TableVersion


def column_schema(schema: pa.Schema) -> dg.TableSchema:
    return dg.TableSchema(columns=[dg.TableColumn(name=f.name, type=str(f.type)) for f in schema])


def table_metadata(version: TableVersion, schema: pa.Schema) -> dict[str, object]:
    """Row count, column schema and the immutable file behind a written table version."""
    return {
        "dagster/row_count": version.rows,
        "dagster/column_schema": column_schema(schema),
        "file": version.file,
    }
