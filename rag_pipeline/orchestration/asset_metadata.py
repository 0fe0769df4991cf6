"""Materialisation metadata in Dagster's standard keys, so asset pages show rows and columns,
and the asset checks that guard a reader."""

from __future__ import annotations

import warnings

import dagster as dg
import pyarrow as pa

from rag_pipeline.core.storage.warehouse import TableVersion


def column_schema(schema: pa.Schema) -> dg.TableSchema:
    return dg.TableSchema(columns=[dg.TableColumn(name=f.name, type=str(f.type)) for f in schema])


def table_metadata(version: TableVersion, schema: pa.Schema) -> dict[str, object]:
    """Row count, column schema and the immutable file behind a written table version."""
    return {
        "dagster/row_count": version.rows,
        "dagster/column_schema": column_schema(schema),
        "file": version.file,
    }


def blocking_checks(asset: str, descriptions: dict[str, str],
                    partitions: dg.PartitionsDefinition) -> list[dg.AssetCheckSpec]:
    """Blocking checks of ``asset`` (a failure fails the step, so nothing downstream in the run
    executes), each with one history per partition (``partitions_def`` on a check spec is
    marked preview; its warning is silenced here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return [dg.AssetCheckSpec(name, asset=asset, description=description, blocking=True,
                                  partitions_def=partitions)
                for name, description in descriptions.items()]
