"""The ``chunks`` asset checks, run by Dagster on tables with planted flaws.

The core chunker refuses to return a chunk whose offsets do not slice exactly (``OffsetError``),
so to see the *stored-table* checks fail, the flaw is planted between the core and the write:
``chunks_table`` is wrapped where the build stage calls it (:mod:`rag_pipeline.core.index.build`)
to corrupt the table it returns, and the asset then materialises the corrupted table and
evaluates its checks against what it stored.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from rag_pipeline.core.index import build as index_build
from rag_pipeline.orchestration.automation import CHUNKS_JOB
from rag_pipeline_tests.orchestration.assets.conftest import TinyProject, check_outcomes, corrupting

ALL_PASS = {"offsets_slice_exactly": True, "chunk_ids_unique": True, "covers_every_character": True}


def _materialise_header(project: TinyProject) -> dict[str, bool]:
    result = project.run(CHUNKS_JOB, "header")
    # The checks are blocking: a failed one fails the chunks step, so the BM25 tables of the
    # flawed chunks are never computed and nothing downstream runs.
    assert not result.success
    materialised = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert materialised == {"chunks"}
    assert all(e.blocking for e in result.get_asset_check_evaluations())
    return check_outcomes(result)


def _shift_first_chunk(table: pa.Table) -> pa.Table:
    # Planted flaw (trips offsets_slice_exactly): the first chunk's from/to move one character
    # right; its content stays as it was.
    shift = pa.array([1] + [0] * (table.num_rows - 1), pa.int64())
    index = table.schema.get_field_index
    table = table.set_column(index("from"), "from", pc.add(table.column("from"), shift))
    return table.set_column(index("to"), "to", pc.add(table.column("to"), shift))


def _repeat_first_chunk(table: pa.Table) -> pa.Table:
    # Planted flaw (trips chunk_ids_unique): the first row written twice.
    return pa.concat_tables([table, table.slice(0, 1)])


def _drop_last_chunk(table: pa.Table) -> pa.Table:
    # Planted flaw (trips covers_every_character): a chunk is lost, so its document has
    # characters no chunk covers.
    return table.slice(0, table.num_rows - 1)


@pytest.mark.parametrize(("corrupt", "failing"), [
    # Each flaw trips its own check and leaves the others passing (so no check always fails);
    # the shifted chunk also leaves its first character uncovered. A clean table passes all
    # three in test_index_e2e.
    (_shift_first_chunk, {"offsets_slice_exactly", "covers_every_character"}),
    (_repeat_first_chunk, {"chunk_ids_unique"}),
    (_drop_last_chunk, {"covers_every_character"}),
])
def test_a_corrupted_table_fails_its_check(tiny_project: TinyProject, monkeypatch: pytest.MonkeyPatch,
                                           corrupt, failing: set[str]):
    monkeypatch.setattr(index_build, "chunks_table", corrupting(index_build.chunks_table, corrupt))
    assert _materialise_header(tiny_project) == {name: name not in failing for name in ALL_PASS}
