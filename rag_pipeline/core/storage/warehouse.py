"""Parquet is the truth: immutable table files, a small pointer per partition, written last.

Tables live in Hive-style folders under the warehouse root (a local folder or an object-store
URI such as ``s3://bucket/prefix``, through pyarrow's filesystems)::

    <root>/<table>/<key>=<value>/.../part-<digest>.parquet   immutable, named by content
    <root>/<table>/<key>=<value>/.../_latest.json            which file is the latest, and
                                                             which input files it was built from

A write puts the new file first and then replaces the pointer (locally: temp file, fsync,
rename; on an object store: one PUT, which is atomic per object), so a killed writer leaves the
previous pointer and its file whole, and a reader never sees half a table. Identical content
gets the identical file name, so rewriting unchanged rows changes nothing (the digest is the
table's data version). What readers of the *index* see is not these pointers but a published
generation (:mod:`rag_pipeline.core.index.generations`).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from rag_pipeline.core.storage.full_disk import naming_a_full_disk
from rag_pipeline.core.storage.location import local_folder, object_store, warehouse_location
from rag_pipeline.core.text.arguments import InvalidArgumentError

POINTER_FILE = "_latest.json"
DIGEST_CHARS = 16
T = TypeVar("T")
PARTITION_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]*")
"""A chunker name or a model key: what a partition folder ``<key>=<value>`` may hold."""


class UnsafePathError(ValueError):
    """A path relative to the warehouse root that would name something outside it."""


def check_relative(relative: str) -> str:
    """``relative`` if it names a place under the root: ``/``-separated, no empty, ``.`` or
    ``..`` segment, no leading ``/``, no backslash or NUL (the same rule for a local folder and
    an object store, whose keys are not normalised for us).

    Raises:
        UnsafePathError: If it would leave the root.
    """
    parts = relative.removesuffix("/").split("/")
    if not relative or relative.startswith("/") or "\\" in relative or "\0" in relative or \
            any(part in ("", ".", "..") for part in parts):
        raise UnsafePathError(f"{relative!r} would resolve outside the warehouse root")
    return relative


def check_partition_value(value: str, name: str = "partition value") -> str:
    """A partition value that becomes a folder name: a chunker name or a model key.

    Raises:
        InvalidArgumentError: If ``value`` is empty, starts with anything but a letter or digit,
            or holds a character other than letters, digits, ``.``, ``_``, ``@``, ``-``.
    """
    if PARTITION_VALUE.fullmatch(value) is None:
        raise InvalidArgumentError(f"{name} {value!r} cannot name a folder: letters, digits, "
                                   "'.', '_', '@', '-' only, starting with a letter or digit")
    return value


class CorruptFileError(ValueError):
    """A pointer or manifest that cannot be read; the message names the file."""


class IndexNotBuiltError(Exception):
    """A table or partition that a reader asked for has not been materialised yet."""

    HINT = ("run `rag-pipeline index` first, or name the configuration that built it (--config, "
            "as `init` printed it) or its data folder (--data-dir)")
    """What to do when the folder read holds no index, or not the one asked for."""

    @classmethod
    def in_folder(cls, data_dir: Path) -> IndexNotBuiltError:
        """Nothing at all built in ``data_dir``, which the message names: a mistyped
        ``--data-dir`` would otherwise lead to a second index built in the wrong folder."""
        return cls(f"no index built yet in the data folder {Path(data_dir).absolute()}: {cls.HINT}")


@dataclass(frozen=True)
class TableVersion:
    """One written version of one table partition: its file (relative to the warehouse root),
    content digest, row count and the files it was built from (``{table: file}``)."""

    table: str
    partition: dict[str, str]
    file: str
    digest: str
    rows: int
    written_at: str
    inputs: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping) -> TableVersion:
        return cls(table=data["table"], partition=dict(data["partition"]), file=data["file"],
                   digest=data["digest"], rows=int(data["rows"]), written_at=data["written_at"],
                   inputs=dict(data.get("inputs") or {}))


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def open_to_every_user(data_dir: Path) -> str | None:
    """A warning when every local user may read the data folder (its mode lets others enter
    it, and the tables in it, at names anyone can guess, are written readable): its tables
    hold every document's text, whatever ``[access]`` says; None when it is closed (or not
    there yet)."""
    try:
        mode = data_dir.stat().st_mode & 0o777
    except OSError:
        return None
    if not mode & 0o001:
        return None
    return (f"the data folder {data_dir} is open to every user of this machine (mode "
            f"{mode:o}): its tables hold every document's text, whatever [access] says; "
            f"`chmod o-rwx {data_dir}` closes it")


class Warehouse:
    """The project's tables. ``data_dir`` is always a local folder (the DuckDB file lives there);
    ``location`` is where the Parquet files live: ``<data_dir>/warehouse`` unless an object-store
    URI is given."""

    def __init__(self, data_dir: Path, location: str | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.location = warehouse_location(self.data_dir, location)
        if object_store(self.location):
            self.fs, root = pafs.FileSystem.from_uri(self.location)
            self.local = False
        else:
            self.fs = pafs.LocalFileSystem()
            root = str(local_folder(self.location).absolute())
            self.local = True
        self.root = root.rstrip("/")
        self.db_path = self.data_dir / "rag.duckdb"

    # -- paths -------------------------------------------------------------------------------

    def partition_dir(self, table: str, partition: Mapping[str, str] | None = None) -> str:
        """The partition's folder relative to the root: ``chunks/chunker=header``."""
        parts = [table]
        for key, value in (partition or {}).items():
            check_partition_value(value, f"partition value of {key}")
            parts.append(f"{key}={value}")
        return "/".join(parts)

    def full_path(self, relative: str) -> str:
        """The root joined with ``relative``, which must stay under it (see
        :func:`check_relative`)."""
        return f"{self.root}/{check_relative(relative)}"

    # -- bytes -------------------------------------------------------------------------------

    def put_bytes(self, relative: str, data: bytes) -> None:
        """Writes one object whole: locally temp file + fsync + rename, else one PUT."""
        target = self.full_path(relative)
        if not self.local:
            with self.fs.open_output_stream(target) as out:
                out.write(data)
            return
        path = Path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
        try:
            with naming_a_full_disk("to write", path), tmp.open("wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            tmp.replace(path)
        except BaseException:
            tmp.unlink(missing_ok=True)  # a full disk keeps no half-written copy
            raise

    def get_bytes(self, relative: str) -> bytes | None:
        """The object's bytes, or None when it does not exist."""
        try:
            with self.fs.open_input_stream(self.full_path(relative)) as stream:
                return stream.read()
        except (FileNotFoundError, OSError) as exc:
            if isinstance(exc, FileNotFoundError) or "not found" in str(exc).lower() or \
                    "does not exist" in str(exc).lower() or "NoSuchKey" in str(exc):
                return None
            raise

    def put_json(self, relative: str, data: Mapping) -> None:
        self.put_bytes(relative, json.dumps(data, indent=1, sort_keys=True).encode())

    def get_json(self, relative: str) -> dict | None:
        """The JSON object stored at ``relative``, or None when there is none.

        Raises:
            CorruptFileError: If the file is not a JSON object (the message names the file).
        """
        raw = self.get_bytes(relative)
        if raw is None:
            return None
        try:
            data = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CorruptFileError(f"{self.full_path(relative)} is not valid JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise CorruptFileError(f"{self.full_path(relative)} is not a JSON object")
        return data

    def parse_json(self, relative: str, parse: Callable[[Mapping], T]) -> T | None:
        """``parse`` of the JSON object at ``relative`` (None when there is none).

        Raises:
            CorruptFileError: If the file is not JSON or ``parse`` finds a field missing or of
                the wrong type (the message names the file and the field).
        """
        data = self.get_json(relative)
        if data is None:
            return None
        try:
            return parse(data)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptFileError(f"{self.full_path(relative)} is not a valid record: "
                                   f"{type(exc).__name__}: {exc}") from exc

    def delete(self, relative: str) -> None:
        try:
            self.fs.delete_file(self.full_path(relative))
        except FileNotFoundError:
            pass

    def delete_prefix(self, prefix: str) -> list[str]:
        """Deletes every file under ``prefix`` (a partition or generation folder); returns them
        (relative). The pointer goes first, so a reader never follows it to a deleted file. In
        a local warehouse the folders left empty, ``prefix`` and those above it, go too."""
        files = sorted((self.relative(info.path) for info in self.list_files(prefix)),
                       key=lambda file: Path(file).name != POINTER_FILE)
        for file in files:
            self.delete(file)
        if self.local:
            self._remove_empty_folders(Path(self.full_path(prefix)))
        return files

    def _remove_empty_folders(self, folder: Path) -> None:
        """Removes the empty folders under ``folder``, then ``folder`` and each folder above it
        up to the root while it is empty (a folder something was written into meanwhile is
        not empty, and stays)."""
        root = Path(self.root)
        if not folder.is_relative_to(root) or folder == root:
            return
        for inner, _, _ in os.walk(folder, topdown=False):
            try:
                os.rmdir(inner)
            except OSError:
                pass
        for above in [folder, *folder.parents]:
            if above == root or not above.is_relative_to(root):
                break
            try:
                os.rmdir(above)
            except FileNotFoundError:
                continue
            except OSError:
                break

    def list_files(self, prefix: str = "") -> list[pafs.FileInfo]:
        """Every file under ``prefix`` (relative), recursively; empty when the folder is absent."""
        base = self.full_path(prefix).rstrip("/") if prefix else self.root
        selector = pafs.FileSelector(base, recursive=True, allow_not_found=True)
        return [info for info in self.fs.get_file_info(selector)
                if info.type == pafs.FileType.File]

    def relative(self, full: str) -> str:
        return full[len(self.root) + 1:]

    # -- tables ------------------------------------------------------------------------------

    def write(self, table: str, data: pa.Table, partition: Mapping[str, str] | None = None,
              inputs: Mapping[str, str] | None = None) -> TableVersion:
        """Writes one partition: the content-named file, then the pointer. Returns the version;
        identical content gives the identical file (and digest) as before."""
        buffer = io.BytesIO()
        pq.write_table(data, buffer, compression="zstd")
        raw = buffer.getvalue()
        digest = hashlib.sha256(raw).hexdigest()[:DIGEST_CHARS]
        folder = self.partition_dir(table, partition)
        file = f"{folder}/part-{digest}.parquet"
        if self.get_file_size(file) != len(raw):
            self.put_bytes(file, raw)
        version = TableVersion(table=table, partition=dict(partition or {}), file=file,
                               digest=digest, rows=data.num_rows, written_at=utc_now(),
                               inputs=dict(inputs or {}))
        self.put_json(f"{folder}/{POINTER_FILE}", asdict(version))
        return version

    def write_parts(self, table: str, schema: pa.Schema, parts: Iterable[pa.Table],
                    partition: Mapping[str, str] | None = None,
                    inputs: Mapping[str, str] | None = None) -> TableVersion:
        """:meth:`write`, streamed: each part becomes row groups of a local temporary file (the
        whole table is never in memory), which is then named by its content and moved (or
        uploaded) into place; the pointer is written last, as by :meth:`write`."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".write-", dir=self.data_dir) as tmp:
            path = Path(tmp) / "part.parquet"
            rows = 0
            with (naming_a_full_disk(f"to write the {table} table in", self.data_dir),
                  pq.ParquetWriter(path, schema, compression="zstd") as writer):
                for part in parts:
                    writer.write_table(part.select(schema.names).cast(schema))
                    rows += part.num_rows
            digest = hashlib.sha256()
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 24), b""):
                    digest.update(block)
            folder = self.partition_dir(table, partition)
            file = f"{folder}/part-{digest.hexdigest()[:DIGEST_CHARS]}.parquet"
            size = path.stat().st_size
            if self.get_file_size(file) != size:
                if self.local:
                    target = Path(self.full_path(file))
                    target.parent.mkdir(parents=True, exist_ok=True)
                    path.replace(target)
                else:
                    pafs.copy_files(str(path), self.full_path(file),
                                    destination_filesystem=self.fs)
        version = TableVersion(table=table, partition=dict(partition or {}), file=file,
                               digest=digest.hexdigest()[:DIGEST_CHARS], rows=rows,
                               written_at=utc_now(), inputs=dict(inputs or {}))
        self.put_json(f"{folder}/{POINTER_FILE}", asdict(version))
        return version

    def get_file_size(self, relative: str) -> int | None:
        info = self.fs.get_file_info(self.full_path(relative))
        return info.size if info.type == pafs.FileType.File else None

    def parquet_rows(self, relative: str) -> int | None:
        """The rows a Parquet file's footer records, read from the footer alone (None: no such
        file).

        Raises:
            pa.ArrowException: The file is no Parquet file (cut short, overwritten).
        """
        if self.get_file_size(relative) is None:
            return None
        with self.fs.open_input_file(self.full_path(relative)) as source:
            return pq.ParquetFile(source).metadata.num_rows

    def version(self, table: str, partition: Mapping[str, str] | None = None) -> TableVersion | None:
        """The latest written version of a partition, or None."""
        return self.parse_json(f"{self.partition_dir(table, partition)}/{POINTER_FILE}",
                               TableVersion.from_json)

    def require_version(self, table: str,
                        partition: Mapping[str, str] | None = None) -> TableVersion:
        version = self.version(table, partition)
        if version is None:
            where = ", ".join(f"{k}={v}" for k, v in (partition or {}).items()) or "unpartitioned"
            raise IndexNotBuiltError(f"table {table!r} ({where}) has not been built yet: "
                                     "run `rag-pipeline index` first")
        return version

    def exists(self, table: str, partition: Mapping[str, str] | None = None) -> bool:
        return self.version(table, partition) is not None

    def read_file(self, file: str, columns: list[str] | None = None) -> pa.Table:
        """One immutable table file (relative to the root)."""
        return pq.read_table(self.full_path(file), columns=columns, filesystem=self.fs)

    def read(self, table: str, partition: Mapping[str, str] | None = None,
             columns: list[str] | None = None) -> pa.Table:
        """The latest version's rows; :class:`IndexNotBuiltError` when it was never written."""
        return self.read_file(self.require_version(table, partition).file, columns)

    def read_or_none(self, table: str, partition: Mapping[str, str] | None = None,
                     columns: list[str] | None = None) -> pa.Table | None:
        version = self.version(table, partition)
        return None if version is None else self.read_file(version.file, columns)

    def versions(self, table: str | None = None) -> list[TableVersion]:
        """The latest version of every written partition (of one table, or of all), sorted."""
        found = []
        for info in self.list_files(table or ""):
            if info.base_name == POINTER_FILE:
                rel = self.relative(info.path)
                if rel.startswith("_"):
                    continue
                version = self.parse_json(rel, TableVersion.from_json)
                if version is not None:
                    found.append(version)
        return sorted(found, key=lambda v: (v.table, sorted(v.partition.items())))

    def partitions(self, table: str) -> list[dict[str, str]]:
        """Every written partition of a table, as ``{key: value}`` dicts, sorted."""
        return [v.partition for v in self.versions(table)]

    def tables(self) -> list[str]:
        return sorted({v.table for v in self.versions()})
