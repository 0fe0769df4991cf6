"""``rag-pipeline``: index, status, ask and eval from a terminal."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rag_pipeline.project_paths import DAGSTER_HOME

if TYPE_CHECKING:
    from rag_pipeline.core.ask import Answer


def _prepare_environment() -> None:
    """The CLI is the process edge: no model hub, and the project's own Dagster instance."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("DAGSTER_HOME", str(DAGSTER_HOME))
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


@click.group()
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder of the Parquet tables and rag.duckdb (default: the project's data/).")
@click.pass_context
def main(ctx: click.Context, data_dir: Path | None) -> None:
    """A versioned hybrid search index that cites exact places and refuses when it must."""
    from rag_pipeline.project_paths import DEFAULT_DATA_DIR

    _prepare_environment()
    ctx.obj = data_dir or DEFAULT_DATA_DIR


@main.command()
@click.option("--corpus", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder of documents to index instead of the bundled Python reference.")
@click.pass_obj
def index(data_dir: Path, corpus: Path | None) -> None:
    """Build or update the whole index through Dagster (runs appear in the UI)."""
    import dagster as dg

    from rag_pipeline.core.status import row_counts
    from rag_pipeline.core.warehouse import Warehouse
    from rag_pipeline.definitions import build_definitions
    from rag_pipeline.index_runs import IndexRunFailed, run_index

    Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    with dg.DagsterInstance.get() as instance:
        try:
            timings = run_index(build_definitions(data_dir=data_dir), instance, corpus=corpus,
                                echo=click.echo)
        except IndexRunFailed as exc:
            _fail(str(exc))
    click.echo("\nstage timings:")
    for t in timings:
        extra = ""
        if "embeddings.embedded" in t.metadata:
            extra = (f"  embedded {t.metadata['embeddings.embedded']}, reused "
                     f"{t.metadata['embeddings.reused']}, "
                     f"{t.metadata['embeddings.chunks_per_second']} chunks/s")
        click.echo(f"  {t.job:15s} {t.partition:45s} {t.seconds:7.1f} s{extra}")
    click.echo(f"  total {sum(t.seconds for t in timings):.1f} s")
    warehouse = Warehouse(data_dir)
    click.echo(f"\nbuilt (DuckDB views in {warehouse.db_path}):")
    for table, rows in row_counts(warehouse).items():
        for row in rows:
            click.echo(f"  {table:11s} {' / '.join(str(v) for v in row[:-1]):55s} {row[-1]:>7}")


@main.command()
@click.pass_obj
def status(data_dir: Path) -> None:
    """Per partition: model, chunk and vector counts; documents ok / failed; stale rows."""
    from rag_pipeline.core.status import index_status
    from rag_pipeline.core.warehouse import IndexNotBuiltError, Warehouse

    try:
        report = index_status(Warehouse(data_dir))
    except IndexNotBuiltError as exc:
        _fail(str(exc))
    click.echo(f"documents: {report.documents_ok} ok, {len(report.documents_failed)} failed, "
               f"{len(report.stale_documents)} stale")
    for document_id, reason in report.documents_failed:
        click.echo(f"  failed  {document_id}: {reason}")
    for document_id in report.stale_documents:
        click.echo(f"  stale   {document_id} (extracted by an older pipeline or extractor)")
    click.echo(f"{'chunker':20s} {'model':28s} {'chunks':>7} {'vectors':>8} {'stale':>6}")
    for p in report.partitions:
        click.echo(f"{p.chunker:20s} {p.model:28s} {p.chunks:7d} {p.vectors:8d} "
                   f"{p.stale_rows:6d}")
    for (chunker, analyzer), n in sorted(report.bm25_terms.items()):
        click.echo(f"bm25 {chunker:20s} {analyzer:8s} {n:7d} terms")


def _print_answer(answer: Answer, show_prompt: bool, show_timings: bool, rerank_note: str) -> None:
    click.echo(f"partition: {answer.partition}   cut: {answer.threshold}   {rerank_note}")
    if not answer.answered:
        click.echo(answer.reason)
    else:
        click.echo(f"{'#':>2}  {'document':28s} {'section':34s} {'fragment':22s} distance")
        for c in answer.citations:
            click.echo(f"{c.index:>2}  {c.document_id[:28]:28s} {c.section[:34]:34s} "
                       f"{c.fragment:22s} {c.cosine_distance:.3f}")
        for c in answer.citations:
            more = f"  (also at {', '.join(c.locations[1:])})" if len(c.locations) > 1 else ""
            click.echo(f"\n[{c.index}] {c.url}{more}\n{c.quote}")
        if answer.rendered_answer:
            click.echo("\n" + answer.rendered_answer)
        if show_prompt and answer.prompt:
            click.echo("\n--- prompt ---\n" + answer.prompt)
    if show_timings:
        click.echo("\ntimings (ms): " + ", ".join(f"{k} {v * 1000:.1f}"
                                                 for k, v in answer.timings.items()))


def answer_json(answer: Answer) -> dict:
    return {
        "question": answer.question, "answered": answer.answered, "reason": answer.reason,
        "threshold": answer.threshold, "partition": answer.partition,
        "closest_distance": answer.closest_distance, "reranked": answer.reranked,
        "citations": [{
            "index": c.index, "document_id": c.document_id, "document_name": c.document_name,
            "locator_label": c.locator_label, "fragment": c.fragment, "from": c.start,
            "to": c.end, "quote": c.quote, "cosine_distance": c.cosine_distance, "url": c.url,
            "locations": list(c.locations)} for c in answer.citations],
        "prompt": answer.prompt,
        "answer": answer.rendered_answer,
        "timings_ms": {k: round(v * 1000, 3) for k, v in answer.timings.items()},
    }


@main.command()
@click.argument("question")
@click.option("--chunker", default="header", show_default=True, help="Chunking partition.")
@click.option("--model", "model_key", default=None,
              help="Model partition key (default: the first declared model).")
@click.option("--retriever", type=click.Choice(["dense", "bm25", "hybrid"]), default="hybrid",
              show_default=True)
@click.option("--analyzer", type=click.Choice(["plain", "english", "code"]), default=None,
              help="BM25 analyzer (default: the project default).")
@click.option("--k", "max_sources", type=click.IntRange(1, 20), default=4, show_default=True,
              help="At most this many sources are kept.")
@click.option("--threshold", type=float, default=None,
              help="Cosine-distance cut (default: the project default).")
@click.option("--rerank", "rerank_model", type=click.Path(exists=True, file_okay=False),
              default=None, help="Cross-encoder folder to rerank the hybrid top 25 (off by default).")
@click.option("--no-collapse", is_flag=True, help="Keep identical passages as separate hits.")
@click.option("--base-url", default=None, help="Cite URLs under this base instead of file URIs.")
@click.option("--generate-url", default=None,
              help="OpenAI-compatible endpoint (e.g. http://127.0.0.1:8080/v1); off by default.")
@click.option("--generate-model", default="default", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--prompt", "show_prompt", is_flag=True, help="Print the prompt too.")
@click.option("--timings", "show_timings", is_flag=True, help="Print the time per stage.")
@click.pass_obj
def ask(data_dir: Path, question: str, chunker: str, model_key: str | None, retriever: str,
        analyzer: str | None, max_sources: int, threshold: float | None, rerank_model: str | None,
        no_collapse: bool,
        base_url: str | None, generate_url: str | None, generate_model: str, as_json: bool,
        show_prompt: bool, show_timings: bool) -> None:
    """Answer QUESTION from the index with citations, or refuse."""
    import json

    from rag_pipeline.core.analyzers import Analyzer
    from rag_pipeline.core.ask import AskSettings, EmptyQuestionError
    from rag_pipeline.core.ask import ask as run_ask
    from rag_pipeline.core.embedder import ModelMismatchError, declared_models, find_model, load_embedder
    from rag_pipeline.core.gate import DEFAULT_CUT
    from rag_pipeline.core.generation import GenerationError, GeneratorSettings
    from rag_pipeline.core.index_store import UnknownPartitionError, load_partition
    from rag_pipeline.core.rerank import Reranker, RerankSettings
    from rag_pipeline.core.retrieval import DEFAULT_ANALYZER, RetrievalSettings, Retriever
    from rag_pipeline.core.warehouse import IndexNotBuiltError
    if not question.strip():
        _fail("the question is empty")
    models = declared_models()
    try:
        spec = find_model(model_key, models) if model_key else models[0]
        index = load_partition(data_dir, chunker, spec.key)
        embedder = load_embedder(spec)
        reranker = Reranker(RerankSettings(Path(rerank_model))) if rerank_model else None
        settings = AskSettings(
            retrieval=RetrievalSettings(retriever=Retriever(retriever),
                                        analyzer=Analyzer(analyzer) if analyzer else DEFAULT_ANALYZER,
                                        collapse_duplicates=not no_collapse),
            cut=DEFAULT_CUT if threshold is None else threshold, max_sources=max_sources,
            base_url=base_url,
            generator=GeneratorSettings(base_url=generate_url, model=generate_model)
            if generate_url else None)
        answer = run_ask(question, index, embedder, settings, reranker)
    except (IndexNotBuiltError, UnknownPartitionError, ModelMismatchError, EmptyQuestionError,
            GenerationError, FileNotFoundError) as exc:
        _fail(str(exc))
    if as_json:
        click.echo(json.dumps(answer_json(answer), ensure_ascii=False, indent=2))
        return
    rerank_note = ("rerank: on" if reranker else
                   "rerank: off (no cross-encoder configured; pass --rerank DIR)")
    _print_answer(answer, show_prompt, show_timings, rerank_note)


@main.command(name="eval")
@click.option("--gold", "gold_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Gold JSONL (default: the bundled Python reference set).")
@click.option("--ood", "ood_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Out-of-domain JSONL (default: the bundled set).")
@click.option("--chunker", "chunkers", multiple=True,
              help="Chunker partition(s) to evaluate (default: every built one).")
@click.option("--model", "model_key", default=None, help="Model partition key.")
@click.option("--beir", "beir_dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=None, help="Evaluate on a BEIR dataset folder instead (corpus.jsonl, "
                                 "queries.jsonl, qrels/test.tsv).")
@click.option("--k1", "k1_values", type=float, multiple=True,
              help="BM25 k1 for --beir (repeatable; default the design's 1.2).")
@click.option("--candidates", is_flag=True,
              help="Also measure every candidate retrieval setting against the default (paired "
                   "sign tests per query style; embeds the header partition's sentences once).")
@click.option("--sentences", "sentence_vectors", is_flag=True,
              help="Embed the header partition's sentences (cached) for the best-sentence "
                   "refusal signal.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_obj
def evaluate_command(data_dir: Path, gold_path: Path | None, ood_path: Path | None, chunkers: tuple[str, ...],
                     model_key: str | None, beir_dir: Path | None, k1_values: tuple[float, ...],
                     candidates: bool, sentence_vectors: bool, as_json: bool) -> None:
    """Measure retrieval (no generation): recall, MRR, destroyed answers, paired tests, sweep."""
    import json

    from rag_pipeline.core.embedder import ModelMismatchError, declared_models, find_model, load_embedder
    from rag_pipeline.core.gold import GoldFormatError
    from rag_pipeline.core.index_store import UnknownPartitionError
    from rag_pipeline.core.warehouse import IndexNotBuiltError
    from rag_pipeline.project_paths import DEFAULT_EVAL_DIR

    models = declared_models()
    try:
        spec = find_model(model_key, models) if model_key else models[0]
    except ModelMismatchError as exc:
        _fail(str(exc))
    if beir_dir is not None:
        from rag_pipeline.core.beir import load_beir, run_beir

        try:
            dataset = load_beir(beir_dir)
        except FileNotFoundError as exc:
            _fail(str(exc))

        def progress(done: int, total: int) -> None:
            if not as_json and (done == total or done % 1024 == 0):
                click.echo(f"  embedded {done}/{total} documents", err=True)

        from rag_pipeline.core.bm25 import K1

        embedder = load_embedder(spec)
        report = run_beir(dataset, embedder, data_dir / "beir", progress,
                          tuple(k1_values) or (K1,))
        if candidates:
            from rag_pipeline.core.beir import run_beir_candidates
            from rag_pipeline.core.evaluation import beir_candidates

            report.rows.extend(run_beir_candidates(dataset, embedder, beir_candidates(),
                                                   data_dir / "beir", progress))
        if as_json:
            click.echo(json.dumps({
                "dataset": report.dataset, "queries": report.queries, "documents": report.documents,
                "model": spec.key,
                "rows": [{"retriever": r.retriever, "analyzer": r.analyzer, "k1": r.k1,
                          "ndcg@10": r.ndcg_at_10,
                          "recall@100": r.recall_at_100, "mrr@10": r.mrr_at_10} for r in report.rows],
                "timings_s": {k: round(v, 3) for k, v in report.timings.items()}}, indent=2))
            return
        click.echo(f"{report.dataset}: {report.queries} queries, {report.documents} documents, "
                   f"model {spec.key}")
        click.echo(f"{'retriever':22s} {'analyzer':9s} {'k1':>4s} {'nDCG@10':>8s} {'R@100':>8s} "
                   f"{'MRR@10':>8s}")
        for r in report.rows:
            click.echo(f"{r.retriever:22s} {r.analyzer or '-':9s} {r.k1 or '-':>4} {r.ndcg_at_10:8.5f} "
                       f"{r.recall_at_100:8.5f} {r.mrr_at_10:8.5f}")
        click.echo("timings (s): " + ", ".join(f"{k} {v:.2f}" for k, v in report.timings.items()))
        return

    from rag_pipeline.core.eval_run import run_eval
    from rag_pipeline.core.eval_tables import (
        gate_cv_markdown,
        paired_markdown,
        report_json,
        summary_markdown,
        sweep_markdown,
    )

    try:
        report = run_eval(data_dir, spec, gold_path or DEFAULT_EVAL_DIR / "gold.jsonl",
                          ood_path or DEFAULT_EVAL_DIR / "ood.jsonl", list(chunkers) or None,
                          candidates=candidates, sentence_vectors=sentence_vectors)
    except (IndexNotBuiltError, UnknownPartitionError, GoldFormatError) as exc:
        _fail(str(exc))
    if as_json:
        click.echo(json.dumps(report_json(report), indent=2))
        return
    click.echo(f"{report.queries} in-domain queries, {report.ood_queries} out-of-domain, "
               f"{len(report.gold_errors)} gold-set errors, model {spec.key}")
    for error in report.gold_errors:
        click.echo(f"  gold-set error {error.line_id}: {error.reason}")
    click.echo("\n" + summary_markdown(report))
    for chunker, ids in report.destroyed.items():
        if ids:
            click.echo(f"destroyed by {chunker}: {', '.join(ids)}")
    click.echo("\n" + paired_markdown(report))
    if report.sweep:
        click.echo("\nrefusal sweep (header x hybrid):\n" + sweep_markdown(report))
        click.echo(f"recommended cut: {report.recommended_cut} ({report.cut_rule})")
    if report.gate_cv:
        click.echo("\ngate, 2-fold cross-validated (held-out counts; folds by gold line id):\n"
                   + gate_cv_markdown(report))
        click.echo(f"top-distance cut under the refusal budget, over every query: "
                   f"{report.budget_cut:.4f}")
    click.echo(f"\neval wall time: {report.timings['total']:.1f} s")
