"""Running an evaluation: the index it needs named, with what to do, when it is not there."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_pipeline.core.evaluation.run import run_eval
from rag_pipeline.core.storage.warehouse import IndexNotBuiltError, Warehouse
from rag_pipeline_tests.fake_embedder import hashed_spec


def test_an_evaluation_without_the_models_index_names_the_folder_and_what_to_do(tmp_path: Path):
    spec = hashed_spec()
    with pytest.raises(IndexNotBuiltError) as raised:
        run_eval(Warehouse(tmp_path), spec, tmp_path / "gold.jsonl", tmp_path / "ood.jsonl")
    assert str(raised.value) == (
        f"no published index for model {spec.key} in the data folder {tmp_path}: run "
        "`rag-pipeline index` first, or name the configuration that built it (--config, as `init` "
        "printed it) or its data folder (--data-dir)")
