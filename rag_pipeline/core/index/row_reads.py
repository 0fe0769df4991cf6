"""Reading the scattered rows of a mapped copy without mapping them: the vectors a question
rescores, the strings of its hits.

The copies of :mod:`rag_pipeline.core.index.mapped` are mapped into the serving process, which
suits a scan (the exact path, a load's pass over a column). A question instead reads a few
scattered rows, and on this machine's kernel (Linux 6.18, ext4 with large page-cache folios) a
fault on one mapped page maps its whole folio, up to 2 MB, whatever ``madvise`` says: a few
thousand scattered reads put whole files into the resident set (README, "Approximate search").
So what a question asks for row by row is read with ``os.pread`` from the same files: the pages
stay in the kernel's page cache, shared and evictable, and out of the process.
"""

from __future__ import annotations

import mmap
import os
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

__all__ = ["FileRows", "KeyedStrings", "MappedFile", "StringColumn", "random_access_map"]

ITER_ROWS = 65_536
"""Values a :class:`StringColumn` converts at a time when iterated."""


def random_access_map(path: Path) -> mmap.mmap:
    """A read-only map of ``path`` advised ``MADV_RANDOM``: a touched page is read alone.

    The kernel's default read-around fetches pages beside every faulted one (measured at 1.3 M
    chunks: hashing 4,096 evenly spaced rows of the 1.96 GB vectors map brought 1.9 GB into the
    process's resident set); the rows a question reads (its shortlist, its hits) are scattered, so
    their neighbours are never wanted.
    """
    with open(path, "rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    if hasattr(mmap, "MADV_RANDOM"):
        mapped.madvise(mmap.MADV_RANDOM)
    return mapped


@dataclass(frozen=True)
class MappedFile:
    """An open file and the address its map starts at: where a mapped buffer's bytes lie in it."""

    fd: int
    base: int

    @classmethod
    def open(cls, path: Path, base: int) -> MappedFile:
        """``path`` opened for reading (closed when the object is collected), mapped at ``base``."""
        opened = cls(os.open(path, os.O_RDONLY), base)
        weakref.finalize(opened, os.close, opened.fd)
        return opened

    def read(self, address: int, size: int) -> bytes:
        """``size`` bytes of the map from ``address``, read from the file (nothing is mapped)."""
        data = os.pread(self.fd, size, address - self.base)
        if len(data) != size:
            raise OSError(f"short read: {len(data)} of {size} bytes")
        return data


class FileRows(np.ndarray):
    """A read-only float32 matrix mapped from a ``.npy`` file, whose rows asked for by an integer
    array (``matrix[rows]``: a shortlist to rescore, the hits' own distances) are read with
    ``os.pread`` rather than through the map; a scan or a slice reads the map.

    On this machine's kernel (Linux 6.18, ext4 with large page-cache folios) a fault on one
    mapped page maps its whole folio, up to 2 MB, whatever ``madvise`` says: the 4,096 rows the
    fingerprint reads put the whole 1.9 GB vectors file of 1.3 M chunks into the serving
    process's resident set, where reading them costs 4,096 small reads and maps nothing. Arrays
    derived from it (views, results) are plain: only the matrix itself reads by ``pread``.
    """

    _fd: int | None = None
    _data_offset: int = 0

    @classmethod
    def open(cls, path: Path) -> FileRows:
        header = np.load(path, mmap_mode="r")
        if header.dtype != np.float32 or header.ndim != 2 or not header.flags.c_contiguous:
            raise ValueError(f"{path} is not a C-ordered float32 matrix")
        matrix = np.ndarray.__new__(cls, header.shape, np.float32, buffer=random_access_map(path),
                                    offset=header.offset, order="C")
        matrix._fd = os.open(path, os.O_RDONLY)
        matrix._data_offset = header.offset
        weakref.finalize(matrix, os.close, matrix._fd)
        return matrix

    def __array_finalize__(self, obj) -> None:
        self._fd = None

    def __getitem__(self, key):
        if self._fd is not None and isinstance(key, (np.ndarray, list)):
            rows = np.asarray(key)
            if rows.ndim == 1 and rows.dtype.kind in "iu":
                return self.read_rows(rows)
        return super().__getitem__(key)

    def read_rows(self, rows: np.ndarray) -> np.ndarray:
        """The rows, in the order asked (negative rows count from the end), as a new array."""
        n, width = self.shape
        rows = np.where(rows < 0, rows + n, rows).astype(np.int64)
        if len(rows) and (rows.min() < 0 or rows.max() >= n):
            raise IndexError(f"rows out of range for a matrix of {n} rows")
        out = np.empty((len(rows), width), np.float32)
        if not len(rows):
            return out  # a memoryview of no bytes cannot be cast
        size = width * 4
        view = memoryview(out).cast("B")
        for i, row in enumerate(rows.tolist()):
            if os.preadv(self._fd, [view[i * size:(i + 1) * size]], self._data_offset + row * size) != size:
                raise OSError(f"short read of row {row}")
        return out


class KeyedStrings(Mapping[str, str]):
    """``key -> string`` over a string column (mapped or not): a dict of row numbers, each value
    read only when asked for (a served generation's canonical texts: at 1.3 M chunks, 79,000
    documents and 0.46 GB of text that a dict of Python strings would hold in the heap)."""

    def __init__(self, row_of: dict[str, int], values: StringColumn) -> None:
        self._row_of = row_of
        self._values = values

    def __getitem__(self, key: str) -> str:
        return self._values[self._row_of[key]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._row_of)

    def __len__(self) -> int:
        return len(self._row_of)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]


class StringColumn(Sequence[str]):
    """A string column read one value at a time (``column[row]``) from Arrow buffers (mapped or
    not), so 1.3 M chunks cost no Python object until a row is asked for.

    With the :class:`MappedFile` its buffers lie in, a value is read from the file (its two
    offsets, then its bytes) instead of through the map: a fault on a mapped page maps its whole
    page-cache folio here (see :class:`FileRows`), so reading the hits of 300 questions mapped
    0.65 GB of the 1000x copies' chunks.
    """

    def __init__(self, values: pa.ChunkedArray | pa.Array, file: MappedFile | None = None) -> None:
        # Never combined: combining the chunks of a mapped column copies it into the heap.
        self._values = values if isinstance(values, pa.ChunkedArray) else pa.chunked_array([values])
        self._file = file
        if file is not None and not (pa.types.is_string(self._values.type)
                                     or pa.types.is_large_string(self._values.type)):
            raise TypeError(f"a string column read from its file must be of a string type, not "
                            f"{self._values.type}")
        self._offset_type = np.int64 if pa.types.is_large_string(self._values.type) else np.int32
        self._ends = np.cumsum([len(c) for c in self._values.chunks], dtype=np.int64)

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, row):
        if isinstance(row, slice):
            return self._values[row].to_pylist()
        row = int(row)
        if self._file is None:
            return self._values[row].as_py()
        if row < 0:
            row += len(self)
        if not 0 <= row < len(self):
            raise IndexError(f"row {row} of a column of {len(self)}")
        at = int(np.searchsorted(self._ends, row, side="right"))
        chunk = self._values.chunk(at)
        index = row - (int(self._ends[at - 1]) if at else 0)
        if chunk.null_count:
            return chunk[index].as_py()
        _, offsets, data = chunk.buffers()
        width = np.dtype(self._offset_type).itemsize
        start, end = (int(v) for v in np.frombuffer(
            self._file.read(offsets.address + (chunk.offset + index) * width, 2 * width), self._offset_type))
        return self._file.read(data.address + start, end - start).decode("utf-8") if end > start else ""

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self._values), ITER_ROWS):
            yield from self._values.slice(start, ITER_ROWS).to_pylist()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StringColumn):
            return self._values.equals(other._values)
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(other) == len(self) and list(self) == list(other)
        return NotImplemented

    __hash__ = None

    def arrow(self) -> pa.ChunkedArray:
        """The Arrow array behind the column."""
        return self._values
