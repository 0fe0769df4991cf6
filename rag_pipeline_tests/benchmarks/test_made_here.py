"""The made-here corpora: every format's long table has each row in a chunk naming every header."""

from __future__ import annotations

import pytest

from rag_pipeline.benchmarks.made_here import (
    LONG_TABLE_WRITERS,
    NEEDLE_CORPORA,
    needle_share,
    table_header_share,
)


@pytest.mark.parametrize("fmt", sorted(LONG_TABLE_WRITERS))
def test_every_row_of_a_60_row_table_is_in_a_chunk_naming_every_header(fmt: str):
    score = table_header_share(fmt, 60)
    assert (score.rows, score.named) == (60, 60)
    assert score.chunks > 1  # the table is long enough to be split


@pytest.mark.parametrize("fmt", sorted(NEEDLE_CORPORA))
def test_every_needle_is_quoted_whole(fmt: str):
    score = needle_share(fmt)
    assert score.quoted == score.needles == 3
