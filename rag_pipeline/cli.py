"""``rag-pipeline``: index, status, ask and eval from a terminal."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def _prepare_environment() -> None:
    """The CLI is the process edge: no model hub, and the project's own Dagster instance."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("DAGSTER_HOME", str(PROJECT_ROOT / "dagster_home"))
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


@click.group()
def main() -> None:
    """A versioned hybrid search index that cites exact places and refuses when it must."""
    _prepare_environment()


@main.command()
@click.option("--corpus", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder of documents to index instead of the bundled Python reference.")
def index(corpus: Path | None) -> None:
    """Build or update the whole index through Dagster (runs appear in the UI)."""
    import dagster as dg

    from rag_pipeline.core.status import row_counts
    from rag_pipeline.core.warehouse import Warehouse
    from rag_pipeline.definitions import DEFAULT_DATA_DIR, defs
    from rag_pipeline.index_runs import IndexRunFailed, run_index

    Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    with dg.DagsterInstance.get() as instance:
        try:
            timings = run_index(defs, instance, corpus=corpus, echo=click.echo)
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
    warehouse = Warehouse(DEFAULT_DATA_DIR)
    click.echo(f"\nbuilt (DuckDB views in {warehouse.db_path}):")
    for table, rows in row_counts(warehouse).items():
        for row in rows:
            click.echo(f"  {table:11s} {' / '.join(str(v) for v in row[:-1]):55s} {row[-1]:>7}")


@main.command()
def status() -> None:
    """Per partition: model, chunk and vector counts; documents ok / failed; stale rows."""
    from rag_pipeline.core.status import index_status
    from rag_pipeline.core.warehouse import IndexNotBuiltError, Warehouse
    from rag_pipeline.definitions import DEFAULT_DATA_DIR

    try:
        report = index_status(Warehouse(DEFAULT_DATA_DIR))
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
        click.echo(f"bm25 {chunker:15s} {analyzer:8s} {n:7d} terms")
