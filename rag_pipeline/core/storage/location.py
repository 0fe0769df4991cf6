"""Where a data folder's Parquet tables live, decided in one place (and importable without
pyarrow, so a process that only compares locations never loads it)."""

from __future__ import annotations

from pathlib import Path


def warehouse_location(data_dir: Path, location: str | None = None) -> str:
    """``location`` (a folder or an object-store URI such as ``s3://bucket/prefix``) when one is
    given, else the data folder's own ``<data_dir>/warehouse``."""
    return location or str(Path(data_dir) / "warehouse")
