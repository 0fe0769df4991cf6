"""Where a data folder's Parquet tables live, decided in one place (and importable without
pyarrow, so a process that only compares locations never loads it)."""

from __future__ import annotations

from pathlib import Path


def warehouse_location(data_dir: Path, location: str | None = None) -> str:
    """``location`` (a folder or an object-store URI such as ``s3://bucket/prefix``) when one is
    given, else the data folder's own ``<data_dir>/warehouse``."""
    return location or str(Path(data_dir) / "warehouse")


def object_store(location: str) -> bool:
    """Whether ``location`` names an object store (``s3://...``), not a local folder (a path,
    or a ``file://`` URI)."""
    return "://" in location and not location.startswith("file://")


def local_folder(location: str) -> Path:
    """The folder a local ``location`` names (a path, or a ``file://`` URI)."""
    return Path(location.removeprefix("file://"))
