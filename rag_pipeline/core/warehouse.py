"""Parquet is the truth; DuckDB holds views over it.

Tables live in Hive-style folders, ``<root>/<table>/<key>=<value>/.../part-0.parquet``. Each
partition has one writer, which writes a temporary file beside the target and renames it over
the target, so a killed run leaves the previous table whole. The DuckDB file only holds views
(``read_parquet`` over each table's folder, partition keys as columns), rebuilt after writes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

PART_FILE = "part-0.parquet"


class IndexNotBuiltError(Exception):
    """A table or partition that a reader asked for has not been materialised yet."""


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class Warehouse:
    """The project's ``data/`` folder: Parquet tables under ``warehouse/``, views in a DuckDB file."""

    def __init__(self, data_dir: Path, db_path: Path | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.root = self.data_dir / "warehouse"
        self.db_path = Path(db_path) if db_path else self.data_dir / "rag.duckdb"

    def partition_dir(self, table: str, partition: Mapping[str, str] | None = None) -> Path:
        path = self.root / table
        for key, value in (partition or {}).items():
            if "/" in value or value in ("", ".", ".."):
                raise ValueError(f"partition value {value!r} cannot name a folder")
            path = path / f"{key}={value}"
        return path

    def part_path(self, table: str, partition: Mapping[str, str] | None = None) -> Path:
        return self.partition_dir(table, partition) / PART_FILE

    def write(self, table: str, data: pa.Table,
              partition: Mapping[str, str] | None = None) -> Path:
        """Writes one partition atomically: temp file, fsync, rename over the old file."""
        target = self.part_path(table, partition)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{PART_FILE}.{os.getpid()}.tmp"
        pq.write_table(data, tmp, compression="zstd")
        with tmp.open("rb") as handle:
            os.fsync(handle.fileno())
        tmp.replace(target)
        return target

    def exists(self, table: str, partition: Mapping[str, str] | None = None) -> bool:
        return self.part_path(table, partition).is_file()

    def read(self, table: str, partition: Mapping[str, str] | None = None,
             columns: list[str] | None = None) -> pa.Table:
        """One partition's rows; :class:`IndexNotBuiltError` when it was never written."""
        path = self.part_path(table, partition)
        if not path.is_file():
            where = ", ".join(f"{k}={v}" for k, v in (partition or {}).items()) or "unpartitioned"
            raise IndexNotBuiltError(f"table {table!r} ({where}) has not been built yet: "
                                     "run `rag-pipeline index` first")
        return pq.read_table(path, columns=columns)

    def read_or_none(self, table: str, partition: Mapping[str, str] | None = None,
                     columns: list[str] | None = None) -> pa.Table | None:
        try:
            return self.read(table, partition, columns)
        except IndexNotBuiltError:
            return None

    def partitions(self, table: str) -> list[dict[str, str]]:
        """Every written partition of a table, as ``{key: value}`` dicts, sorted."""
        found = []
        for path in sorted((self.root / table).rglob(PART_FILE)):
            parts = path.parent.relative_to(self.root / table).parts
            found.append(dict(part.split("=", 1) for part in parts))
        return found

    def tables(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir()
                      if p.is_dir() and any(p.rglob(PART_FILE)))

    def refresh_views(self, *, timeout_s: float = 120.0) -> list[str]:
        """(Re)creates one DuckDB view per table that has files. Another process may hold the
        DuckDB file's write lock for a moment (parallel steps), so a lock conflict is retried."""
        import duckdb

        tables = self.tables()
        statements = []
        for table in tables:
            depth = len(self.partitions(table)[0])
            pattern = str(self.root / table / ("*/" * depth) / PART_FILE)
            statements.append(
                f'CREATE OR REPLACE VIEW "{table}" AS SELECT * FROM read_parquet('
                f"{_sql_string(pattern)}, hive_partitioning = true, hive_types_autocast = false,"
                " union_by_name = true)")
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout_s
        delay = 0.05
        while True:
            try:
                with duckdb.connect(str(self.db_path)) as con:
                    existing = {r[0] for r in con.execute(
                        "select view_name from duckdb_views() where not internal").fetchall()}
                    for gone in sorted(existing - set(tables)):
                        con.execute(f'DROP VIEW "{gone}"')
                    for statement in statements:
                        con.execute(statement)
                return tables
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
