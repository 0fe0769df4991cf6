"""The checks behind the asset checks, each shown to trip on a table with a planted flaw.

Every flaw is commented with the check it must trip; the clean tables pass every check, so a
check that always failed would be caught too.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from rag_pipeline.core.index.invariants import (
    duplicate_ids,
    offset_mismatches,
    uncovered_by_document,
    vector_norm_errors,
)

CANONICAL = "# Title\n\nAlpha beta.\n\nGamma delta.\n"
#            0123456789012345678901234567890123
# The extractor's one section: the body after the "# Title" line, so the heading needs no chunk.
DOCUMENTS = pa.table({"document_id": ["d", "failed"], "canonical_text": [CANONICAL, "lost text"],
                      "status": ["ok", "failed"], "format": ["markdown", "markdown"],
                      "sections": [[{"title": "Title", "start": 7, "end": 34, "level": 1}], []]})


def chunks(rows: list[tuple[str, int, int]], document_id: str = "d") -> pa.Table:
    """Chunks of ``d`` as (chunk_id, from, to), content sliced from the canonical text."""
    return pa.table({
        "chunk_id": [r[0] for r in rows], "document_id": [document_id] * len(rows),
        "from": [r[1] for r in rows], "to": [r[2] for r in rows],
        "content": [CANONICAL[r[1]:r[2]] for r in rows]})


CLEAN = chunks([("d:9-20", 9, 20), ("d:22-34", 22, 34)])


def test_the_clean_table_passes_every_check():
    assert CANONICAL[9:20] == "Alpha beta." and CANONICAL[22:34] == "Gamma delta."
    assert offset_mismatches(DOCUMENTS, CLEAN) == []
    assert duplicate_ids(CLEAN) == []
    # The heading line and white space need no chunk; the failed document is not checked.
    assert uncovered_by_document(DOCUMENTS, CLEAN) == {}


def test_a_shifted_offset_trips_offsets_slice_exactly():
    # Planted flaw (trips offsets_slice_exactly): the second chunk's offsets move one character
    # right while its content stays "Gamma delta.".
    shifted = CLEAN.set_column(2, "from", pa.array([9, 23])).set_column(3, "to", pa.array([20, 35]))
    assert offset_mismatches(DOCUMENTS, shifted) == ["d:22-34"]


def test_a_chunk_of_an_unknown_document_trips_offsets_slice_exactly():
    # Planted flaw (trips offsets_slice_exactly): a chunk whose document is not in the table.
    orphan = pa.concat_tables([CLEAN, chunks([("gone:0-5", 0, 5)], document_id="gone")])
    assert offset_mismatches(DOCUMENTS, orphan) == ["gone:0-5"]


def test_a_repeated_id_trips_chunk_ids_unique():
    # Planted flaw (trips chunk_ids_unique): the first row written twice.
    doubled = pa.concat_tables([CLEAN, CLEAN.slice(0, 1)])
    assert duplicate_ids(doubled) == ["d:9-20"]
    assert offset_mismatches(DOCUMENTS, doubled) == []


def test_a_missing_chunk_trips_covers_every_character():
    # Planted flaw (trips covers_every_character): the "Gamma delta." chunk is lost, so its 11
    # non-blank characters are covered by nothing.
    assert uncovered_by_document(DOCUMENTS, CLEAN.slice(0, 1)) == {"d": 11}
    # A chunk one character short leaves exactly that character.
    short = chunks([("d:9-20", 9, 20), ("d:22-33", 22, 33)])
    assert uncovered_by_document(DOCUMENTS, short) == {"d": 1}
    # An archive's own text, the list of its members, is never chunked, so never uncovered.
    archive = pa.table({"document_id": ["a.zip"], "canonical_text": ["one.md\ntwo.md\n"],
                        "status": ["ok"], "format": ["zip"], "sections": [[]]})
    assert uncovered_by_document(archive, CLEAN.slice(0, 0)) == {}


def embeddings(vectors: np.ndarray) -> pa.Table:
    width = vectors.shape[1]
    return pa.table({"vector": pa.FixedSizeListArray.from_arrays(
        pa.array(vectors.astype(np.float32).reshape(-1)), width)})


def test_unit_vectors_pass_vectors_unit_length():
    assert vector_norm_errors(embeddings(np.eye(3, 4)), 4) == {}


def test_a_long_vector_trips_vectors_unit_length():
    # Planted flaw (trips vectors_unit_length): one row scaled to length 2, one to 1.001 (over
    # the 1e-4 tolerance); a row at 1.00001 is within it.
    vectors = np.eye(4, 4)
    vectors[1] *= 2.0
    vectors[2] *= 1.001
    vectors[3] *= 1.00001
    assert vector_norm_errors(embeddings(vectors), 4) == {"not_unit_length": 2}


def test_a_wrong_width_trips_vectors_unit_length():
    # Planted flaw (trips vectors_unit_length): unit vectors of 3 dimensions where 4 are declared.
    assert vector_norm_errors(embeddings(np.eye(2, 3)), 4) == {"wrong_dimension": 3}
