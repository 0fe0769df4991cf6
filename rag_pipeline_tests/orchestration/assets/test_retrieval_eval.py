"""The evaluation of a corpus without a gold set of its own: one line, no needle errors."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from rag_pipeline.cli import main
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.orchestration.automation import CHUNKS_JOB, EMBEDDINGS_JOB, EVAL_JOB
from rag_pipeline.project_paths import DEFAULT_EVAL_DIR
from rag_pipeline_tests.orchestration.assets.conftest import TinyProject

SKIPPED = (f"no gold set for this corpus: {DEFAULT_EVAL_DIR / 'gold.jsonl'} was written for "
           "corpus 'python-reference', and 57 of its 57 documents (first: 'assert.md') are not "
           "in the index; nothing to score. Write one with `rag-pipeline gold draft`, then "
           "`rag-pipeline eval --gold FILE`")


def test_eval_without_a_gold_set_for_the_corpus_says_so_in_one_line(
        tiny_project: TinyProject, monkeypatch: pytest.MonkeyPatch):
    assert tiny_project.run(CHUNKS_JOB, "header").success
    assert tiny_project.run(EMBEDDINGS_JOB, tiny_project.embeddings_key()).success
    result = tiny_project.run(EVAL_JOB, tiny_project.spec.key)
    assert result.success
    metadata = {e.asset_key.path[-1]: e.step_materialization_data.materialization.metadata
                for e in result.get_asset_materialization_events()}
    assert {name: m["skipped"].value for name, m in metadata.items()} == {
        name: SKIPPED for name in ("eval_ranks", "eval_summary", "eval_paired", "eval_sweep",
                                   "eval_gold_errors", "eval_gate_cv")}
    warehouse = Warehouse(tiny_project.data_dir)
    # No "needle not found" rows stored; the empty summary is over the served generation, so
    # `index` sees the evaluation as current.
    assert warehouse.read("eval_gold_errors", {"model": tiny_project.spec.key}).num_rows == 0
    summary = warehouse.version("eval_summary", {"model": tiny_project.spec.key})
    assert list(summary.inputs) == ["header"]
    assert warehouse.read("eval_summary", {"model": tiny_project.spec.key}).num_rows == 0

    # The hashed stand-in is not declared in rag_pipeline.toml: the CLI is given it as declared.
    for module in ("edge", "evaluation"):
        monkeypatch.setattr(f"rag_pipeline.cli.{module}.declared_models", lambda: (tiny_project.spec,))
    shown = CliRunner().invoke(main, ["--data-dir", str(tiny_project.data_dir), "eval", "--model",
                                      tiny_project.spec.key])
    assert (shown.exit_code, shown.output) == (0, SKIPPED + "\n")
    given = CliRunner().invoke(main, ["--data-dir", str(tiny_project.data_dir), "eval", "--model",
                                      tiny_project.spec.key, "--gold",
                                      str(DEFAULT_EVAL_DIR / "gold.jsonl")])
    assert (given.exit_code, given.output) == (2, f"error: {SKIPPED}\n")
