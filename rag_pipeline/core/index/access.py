"""Readers of every chunk of a served partition, and the rows one principal may read.

:class:`AccessLabels` holds, per row, the set of groups that may read it (from the
:class:`~rag_pipeline.core.config.access.AccessPolicy`, by the row's document id). A principal's
groups become a :class:`Readable`: a boolean mask over the rows and the readable rows in order,
which BM25, the exact scan and the approximate index all rank within
(:mod:`rag_pipeline.core.retrieval.retriever`): candidates are produced from readable rows only,
never dropped afterwards. ``groups=None`` means everything (no ``[access]`` declared, or an
in-process ask without ``--groups``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rag_pipeline.core.config.access import AccessPolicy
from rag_pipeline.core.runtime.recent import Recent

if TYPE_CHECKING:
    from rag_pipeline.core.index.store import PartitionIndex

__all__ = ["AccessLabels", "Readable", "labelled", "readable_rows"]

MAX_DOCUMENT_ID_CHARS = 4096
"""Longer than any path a file system opens (Linux's PATH_MAX) or object key (S3: 1,024 bytes):
a document id asked for past this is no document (a 16 KB name of slashes would list its
8,000 enclosing names, 128 MB, before any lookup)."""


MASK_CACHE = 32
"""Distinct principals' masks kept per partition (a mask is one byte per row)."""


@dataclass(frozen=True)
class Readable:
    """The rows one principal may read: ``mask[row]`` and ``rows`` (ascending)."""

    mask: np.ndarray
    rows: np.ndarray
    _bitmap: list = field(default_factory=list, compare=False, repr=False)

    @classmethod
    def of_mask(cls, mask: np.ndarray) -> Readable:
        mask = np.asarray(mask, bool)
        return cls(mask, np.flatnonzero(mask).astype(np.int64))

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def selectivity(self) -> float:
        """The share of the partition's rows that is readable."""
        return len(self.rows) / len(self.mask) if len(self.mask) else 0.0

    def bitmap(self) -> np.ndarray:
        """The mask packed little-endian, 8 rows a byte (faiss's ``IDSelectorBitmap``)."""
        if not self._bitmap:
            self._bitmap.append(np.packbits(self.mask, bitorder="little"))
        return self._bitmap[0]


def _document_codes(document_ids: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Each row's position among the distinct document ids, and those ids."""
    arrow = document_ids.arrow() if hasattr(document_ids, "arrow") else pa.chunked_array(
        [pa.array(list(document_ids), pa.string())])
    encoded = pc.dictionary_encode(arrow).combine_chunks()
    return (encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64),
            encoded.dictionary.to_pylist())


@dataclass
class AccessLabels:
    """The readers of every row of one loaded partition under one policy.

    Attributes:
        digest: The policy's digest (a changed rule is a new labelling).
        reader_sets: The distinct reader sets, in order of first row.
        codes: Each row's position in ``reader_sets``.
        documents: ``document_id -> readers`` of every document of the generation.
    """

    digest: str
    reader_sets: tuple[frozenset[str], ...]
    codes: np.ndarray
    documents: Mapping[str, tuple[str, ...]]
    policy: AccessPolicy
    _masks: Recent[frozenset[str], Readable] = field(
        default_factory=lambda: Recent(MASK_CACHE), repr=False, compare=False)

    @classmethod
    def of(cls, document_ids: Sequence[str], policy: AccessPolicy,
           corpus_ids: Sequence[str] = ()) -> AccessLabels:
        """Labels rows by their document's readers, read over ``corpus_ids`` (every document
        of the generation, whatever its status: a container's failed member counts) and the
        rows' own documents."""
        positions, ids = _document_codes(document_ids)
        by_document = policy.readers_by_document([*corpus_ids, *ids])
        readers = [by_document[d] for d in ids]
        sets: dict[frozenset[str], int] = {}
        per_document = np.array([sets.setdefault(frozenset(r), len(sets)) for r in readers],
                                np.int32)
        codes = per_document[positions] if len(positions) else np.zeros(0, np.int32)
        return cls(policy.digest, tuple(sets), codes, by_document, policy)

    def readers_of_row(self, row: int) -> frozenset[str]:
        return self.reader_sets[int(self.codes[row])]

    def readable(self, groups: frozenset[str]) -> Readable:
        """The rows a principal of ``groups`` reads (cached per distinct group set)."""
        key = frozenset(groups)
        found = self._masks.get(key)
        if found is not None:
            return found
        allowed = np.array([not key.isdisjoint(s) for s in self.reader_sets], bool)
        mask = allowed[self.codes] if len(self.reader_sets) else np.zeros(len(self.codes), bool)
        found = Readable.of_mask(mask)
        self._masks.put(key, found)
        return found

    def may_read(self, document_id: str, groups: frozenset[str] | None) -> bool:
        """Whether ``groups`` reads ``document_id`` (one the generation does not hold: by its
        rule and its containers')."""
        if groups is None:
            return True
        readers = self.documents.get(document_id)
        if readers is None:
            readers = self.policy.readers_of(document_id, self.documents)
        return not frozenset(groups).isdisjoint(readers)

    def may_open(self, document_id: str, groups: frozenset[str] | None) -> bool:
        """:meth:`may_read` of one document asked for by name, its rules matched whether the
        generation holds it or not, so the answer takes as long either way (an attacker timed
        the 404 of an unreadable document against a missing one's)."""
        if groups is None:
            return True
        if len(document_id) > MAX_DOCUMENT_ID_CHARS:
            return False  # a name no corpus holds, whose containers would take its square to list
        by_rule = self.policy.readers_of(document_id, self.documents)
        return not frozenset(groups).isdisjoint(self.documents.get(document_id, by_rule))


_LABELLED: Recent[tuple, PartitionIndex] = Recent(4)


def labelled(index: PartitionIndex, policy: AccessPolicy | None) -> PartitionIndex:
    """``index`` with its rows labelled by ``policy`` (cached per generation and rule digest;
    the vectors, chunks and BM25 arrays are the same objects: a rule change re-labels, it
    re-reads nothing). ``policy`` None: the index unlabelled (everyone reads everything)."""
    if policy is None:
        return index if index.access is None else replace(index, access=None)
    if index.access is not None and index.access.digest == policy.digest:
        return index
    key = (index.generation, index.chunker, index.model_key, policy.digest)
    found = _LABELLED.get(key)
    if found is None:
        found = replace(index, access=AccessLabels.of(index.document_ids, policy,
                                                       index.corpus_ids))
        _LABELLED.put(key, found)
    return found


def readable_rows(index: PartitionIndex, groups: frozenset[str] | None) -> Readable | None:
    """What ``groups`` may read of ``index``: None for everything (no labels, or no groups
    given: the administrator's view)."""
    if groups is None or index.access is None:
        return None
    return index.access.readable(groups)
