"""The CLI over the bundled corpus: cited answers, refusals and clear errors (no tracebacks).

Builds only the production partition (header x all-MiniLM-L6-v2) of the Python Language
Reference through the Dagster jobs, so the real model embeds the real corpus once.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from click.testing import CliRunner

from rag_pipeline.cli import main
from rag_pipeline.core.evaluation.metrics import wilson_interval
from rag_pipeline.core.ingest.corpus_export import export_python_reference
from rag_pipeline.definitions import build_definitions
from rag_pipeline.orchestration.automation import CHUNKS_JOB, DOCUMENTS_JOB, EMBEDDINGS_JOB

pytestmark = pytest.mark.slow

ON_TOPIC = "what happens to the loop variable when a for loop is terminated by break"
OFF_TOPIC = "what is the capital of france"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory, minilm) -> Path:
    root = tmp_path_factory.mktemp("cli")
    corpus = root / "python-reference"
    export_python_reference(corpus)
    data = root / "data"
    defs = build_definitions(data_dir=data, corpus_dir=corpus, models=[minilm])
    instance = dg.DagsterInstance.ephemeral()
    assert defs.resolve_job_def(DOCUMENTS_JOB).execute_in_process(instance=instance).success
    assert defs.resolve_job_def(CHUNKS_JOB).execute_in_process(
        instance=instance, partition_key="header").success
    assert defs.resolve_job_def(EMBEDDINGS_JOB).execute_in_process(
        instance=instance, partition_key=dg.MultiPartitionKey(
            {"chunker": "header", "model": minilm.key})).success
    return data


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_ask_json_cites_exact_slices_of_the_canonical_text(data_dir: Path):
    code, output = _run("--data-dir", str(data_dir), "ask", ON_TOPIC, "--json")
    assert code == 0, output
    answer = json.loads(output)
    assert (answer["answered"], answer["threshold"], answer["partition"]) == (
        True, 0.6, "header|all-MiniLM-L6-v2@53aa5117")
    assert 1 <= len(answer["citations"]) <= 4
    with duckdb.connect(str(data_dir / "rag.duckdb"), read_only=True) as con:
        canonical = dict(con.execute("select document_id, canonical_text from documents").fetchall())
    for citation in answer["citations"]:
        text = canonical[citation["document_id"]]
        assert citation["quote"] == text[citation["from"]:citation["to"]]
        assert citation["fragment"] == f"#char={citation['from']},{citation['to']}"
        assert citation["url"].endswith(f"/{citation['document_id']}{citation['fragment']}")
        assert not citation["quote"].startswith("[")
        assert citation["cosine_distance"] < 0.6
    # The needle of gold line q03 is in the first two sources' documents.
    assert "If a \"for\" loop is terminated by \"break\", the loop control target\nkeeps its " \
           "current value." in "".join(c["quote"] for c in answer["citations"])
    assert answer["prompt"].startswith("Sources:\n\n[1] ")


def test_ask_refuses_off_topic_questions_and_names_the_cut(data_dir: Path):
    code, output = _run("--data-dir", str(data_dir), "ask", OFF_TOPIC, "--json")
    assert code == 0, output
    answer = json.loads(output)
    assert (answer["answered"], answer["citations"], answer["prompt"]) == (False, [], None)
    assert answer["reason"].startswith(
        f'NO ANSWER: nothing under cosine distance 0.6 for "{OFF_TOPIC}" (closest: ')
    code, output = _run("--data-dir", str(data_dir), "ask", OFF_TOPIC)
    # The rerank line only when --rerank is given.
    assert output.splitlines()[0] == "partition: header|all-MiniLM-L6-v2@53aa5117   cut: 0.6"


@pytest.mark.parametrize(("args", "message"), [
    (["ask", "   "], "error: the question is empty"),
    (["ask", "x", "--chunker", "blind"],
     "error: no published index for chunker 'blind'; published: ['header']"),
    (["ask", "x", "--model", "other@00000000"],
     "error: model 'other@00000000' is not declared; declared: ['all-MiniLM-L6-v2@53aa5117', "
     "'all-MiniLM-L6-v2-int8@b4e41131', 'all-MiniLM-L6-v2-adapted@fc948889']"),
])
def test_ask_errors_are_one_clear_line(data_dir: Path, args: list[str], message: str):
    code, output = _run("--data-dir", str(data_dir), *args)
    assert (code, output.strip()) == (2, message)


def test_a_bad_rerank_folder_and_an_unreachable_endpoint_are_one_line(data_dir: Path, tmp_path: Path):
    # Planted: a folder that passes the file checks but holds no loadable model.
    folder = tmp_path / "ce"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"garbage")
    code, output = _run("--data-dir", str(data_dir), "ask", ON_TOPIC, "--rerank", str(folder))
    assert (code, output) == (2, f"error: --rerank '{folder}' could not be loaded: ValueError: "
                                 f"Unrecognized model in {folder}. Should have a `model_type` key "
                                 "in its config.json.\n")
    # Planted: a port nothing listens on (bound, then closed).
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    code, output = _run("--data-dir", str(data_dir), "ask", ON_TOPIC, "--generate-url", url,
                        "--generate-model", "any")
    assert (code, output) == (
        2, f"error: connection to {url}/chat/completions refused: is the server running?\n")


def test_ask_and_status_before_any_index_is_built(tmp_path: Path):
    for args in (["ask", "anything"], ["status"]):
        code, output = _run("--data-dir", str(tmp_path), *args)
        assert (code, output.strip()) == (2, "error: no index built yet: run `rag-pipeline index` first")


@pytest.mark.parametrize(("args", "message"), [
    (["serve", "--port", "0"], "error: no index built yet: run `rag-pipeline index` first"),
    (["serve", "--threshold", "5"],
     "error: --cut/--threshold must be a finite cosine distance in [0, 2], got 5.0"),
    (["serve", "--base-url", "javascript:alert(1)"],
     "error: --base-url must be an http(s) or file URL, got 'javascript:alert(1)'"),
])
def test_serve_errors_are_one_clear_line(tmp_path: Path, args: list[str], message: str):
    code, output = _run("--data-dir", str(tmp_path), *args)
    assert (code, output.strip()) == (2, message)


def test_serve_on_a_busy_port_fails_before_loading_anything(tmp_path: Path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        # No index either: the port is checked first, so the answer comes at once.
        code, output = _run("--data-dir", str(tmp_path), "serve", "--port", str(port))
    assert (code, output.strip()) == (
        2, f"error: cannot listen on 127.0.0.1:{port}: Address already in use")


def test_eval_json_over_the_bundled_gold_sets(data_dir: Path):
    code, output = _run("--data-dir", str(data_dir), "eval", "--json")
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
