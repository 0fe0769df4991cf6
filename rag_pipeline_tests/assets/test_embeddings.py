"""The ``embeddings`` asset checks, run by Dagster on tables with planted flaws (the hashed
stand-in model embeds; the flaw is planted between the core and the write)."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pytest

from rag_pipeline.assets import embeddings as embeddings_asset
from rag_pipeline.automation import CHUNKS_JOB, EMBEDDINGS_JOB
from rag_pipeline.core.invariants import vector_matrix
from rag_pipeline_tests.assets.conftest import TinyProject, check_outcomes, corrupting

ALL_PASS = {"vectors_unit_length": True, "one_model_per_partition": True,
            "vectors_match_model": True}


def _materialise_header(project: TinyProject) -> dict[str, bool]:
    # Each test starts from no stored vectors (a corrupted partition is never reused).
    shutil.rmtree(project.data_dir / "warehouse" / "embeddings", ignore_errors=True)
    result = project.run(EMBEDDINGS_JOB, project.embeddings_key())
    assert result.success
    return check_outcomes(result)


def _stretch_first_vector(table: pa.Table) -> pa.Table:
    # Planted flaw (trips vectors_unit_length): the first vector doubled in length.
    vectors = vector_matrix(table).copy()
    vectors[0] *= 2.0
    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()),
                                               vectors.shape[1])
    return table.set_column(table.schema.get_field_index("vector"), "vector", column)


def _restamp_first_row(table: pa.Table) -> pa.Table:
    # Planted flaw (trips one_model_per_partition): one row stamped with other weights.
    fingerprints = table.column("model_fingerprint").to_pylist()
    fingerprints[0] = "00000000"
    return table.set_column(table.schema.get_field_index("model_fingerprint"), "model_fingerprint",
                            pa.array(fingerprints, pa.string()))


@pytest.fixture(scope="module", autouse=True)
def header_chunks(tiny_project: TinyProject) -> None:
    assert tiny_project.run(CHUNKS_JOB, "header").success


# Each flaw trips its own check and leaves the other passing; a clean table passes both in
# test_index_e2e.
@pytest.mark.parametrize(("corrupt", "failing"), [
    (_stretch_first_vector, {"vectors_unit_length"}),
    (_restamp_first_row, {"one_model_per_partition"}),
])
def test_a_corrupted_table_fails_its_check(tiny_project: TinyProject, monkeypatch: pytest.MonkeyPatch,
                                           corrupt, failing: set[str]):
    monkeypatch.setattr(embeddings_asset, "embeddings_table",
                        corrupting(embeddings_asset.embeddings_table, corrupt))
    assert _materialise_header(tiny_project) == {name: name not in failing for name in ALL_PASS}
