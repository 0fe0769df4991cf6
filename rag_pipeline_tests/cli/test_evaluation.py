"""``eval``: the report over the bundled gold sets (slow), and chunker names checked first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_pipeline.core.evaluation.metrics import wilson_interval
from rag_pipeline_tests.cli.invoke import CHUNKERS, one_line_failure, run


@pytest.mark.slow
def test_eval_json_over_the_bundled_gold_sets(bundled_data_dir: Path):
    code, output = run("--data-dir", str(bundled_data_dir), "eval", "--json")
    assert code == 0, output
    report = json.loads(output)
    assert (report["queries"], report["ood_queries"], report["gold_errors"]) == (244, 60, [])
    retrievers = ["dense", "bm25", "hybrid", "bm25[plain]", "hybrid[plain]", "hybrid[no-collapse]"]
    assert [(r["chunker"], r["retriever"], r["style"]) for r in report["summary"]] == [
        ("header", retriever, style) for retriever in retrievers
        for style in ("all", "question", "ticket")]
    assert [r["queries"] for r in report["summary"][:3]] == [244, 122, 122]
    hybrid = report["summary"][6]
    assert set(hybrid) == {"chunker", "retriever", "style", "queries", "recall@1", "recall@4",
                           "recall@8", "recall@20", "mrr", "destroyed", "ci95"}
    assert hybrid["destroyed"] == 0
    assert hybrid["ci95"]["recall@4"] == list(wilson_interval(round(hybrid["recall@4"] * 244), 244))
    # The overall hits are the sum of the two styles' hits.
    by_style = {r["style"]: r for r in report["summary"][6:9]}
    assert round(by_style["all"]["recall@4"] * 244) == (
        round(by_style["question"]["recall@4"] * 122) + round(by_style["ticket"]["recall@4"] * 122))
    assert [r["cut"] for r in report["sweep"]] == [0.45, 0.475, 0.5, 0.525, 0.55, 0.575, 0.6,
                                                   0.625, 0.65, 0.675, 0.7, 0.725, 0.75]
    for row in report["sweep"]:
        assert row["in_correct"] + row["in_wrong"] + row["in_refused"] == 244
    assert {(p["a"], p["b"], p["style"]) for p in report["paired"]} == {
        (a, b, style) for a, b in (
            ("header/hybrid", "header/dense"), ("header/hybrid", "header/bm25"),
            ("header/hybrid", "header/hybrid[no-collapse]"), ("header/bm25[plain]", "header/bm25"),
            ("header/hybrid[plain]", "header/hybrid"))
        for style in ("all", "question", "ticket")}
    assert [(g["signal"].split(" (w ")[0], g["rule"], g["in_total"], g["ood_total"])
            for g in report["gate_cv"]] == [
        ("top_distance", "right-outcomes", 244, 60),
        *((s, "refusal-budget", 244, 60)
          for s in ("top_distance", "gap", "standout", "agreement", "vocabulary", "coverage")),
        *((f"top_distance+w*{s}", "refusal-budget", 244, 60)
          for s in ("gap", "standout", "agreement", "vocabulary", "coverage"))]


@pytest.mark.slow
def test_eval_without_an_ood_file_scores_the_gold_set_and_says_so(
        bundled_data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Found by a newcomer's trial: a folder holding the gold.jsonl `gold draft` wrote, and no
    ood.jsonl (which nothing writes), failed the evaluation with a FileNotFoundError."""
    import shutil

    from click.testing import CliRunner

    from rag_pipeline.cli import main
    from rag_pipeline.project_paths import DEFAULT_EVAL_DIR, ENV_EVAL_DIR

    shutil.copy(DEFAULT_EVAL_DIR / "gold.jsonl", tmp_path / "gold.jsonl")
    monkeypatch.setenv(ENV_EVAL_DIR, str(tmp_path))
    result = CliRunner().invoke(main, ["--data-dir", str(bundled_data_dir), "eval", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["queries"], report["ood_queries"]) == (244, 0)
    assert all(row["ood_bluffs"] == 0 for row in report["sweep"])
    assert result.stderr == (
        f"note: no out-of-domain questions ({tmp_path / 'ood.jsonl'} does not exist): the "
        "refusal gate is measured on the in-domain questions alone (one JSON line per question "
        'that the documents do not answer there: {"id": "o1", "query": "...", "kind": "near" or '
        '"off"})\n')


def test_eval_refuses_an_undeclared_chunker():
    assert one_line_failure("eval", "--chunker", "header", "--chunker", "../../etc") == (
        2, f"error: unknown chunker '../../etc'; declared: {CHUNKERS}")


def test_held_out_with_a_beir_folder_still_needs_the_base_to_compare(tmp_path: Path):
    # --beir with --held-out is the adoption rule's general-retrieval check, not a BEIR run of
    # its own: without --versus it is refused before any model is loaded.
    beir = tmp_path / "scifact"
    beir.mkdir()
    assert one_line_failure("eval", "--held-out", "--beir", str(beir), "--model",
                            "all-MiniLM-L6-v2@53aa5117") == (
        2, "error: --held-out compares two models: give --model ADAPTED --versus BASE")
