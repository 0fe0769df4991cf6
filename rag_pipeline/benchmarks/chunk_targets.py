"""Smaller chunk targets against today's 512 characters: the ``header`` chunker at each target,
the real fp32 model, the default retriever, the bundled gold set (issue 11).

Run: ``.venv/bin/python -m rag_pipeline.benchmarks.chunk_targets [--targets 256 384 512]``.

For each target the bundled corpus is chunked with the ``header`` strategy at that
``target_chars`` (every other chunking setting unchanged), embedded by the first declared model
(batched by word-piece counts, as the index does), given BM25 statistics of every analyzer and
published as a generation into a temporary warehouse, then loaded as a partition: the same core
functions ``rag-pipeline index`` runs. The gold set is scored with ``RetrievalSettings()`` through
:func:`~rag_pipeline.core.evaluation.evaluate.evaluate`. Printed per target: chunks, chunks over the
model's word-piece window, gold lines whose needle no chunk holds whole ("destroyed"), and per
query style R@4 and R@20 with Wilson 95 % intervals and MRR; then each smaller target against the
baseline by paired exact sign tests per style at k = 4 and k = 20.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag_pipeline.benchmarks import go_offline
from rag_pipeline.cli.edge import every_passed
from rag_pipeline.core.chunking.strategies import ChunkingSettings, ChunkingStrategy
from rag_pipeline.core.config.gold_file import load_gold
from rag_pipeline.core.config.keys import declared_models
from rag_pipeline.core.embedding.embedder import load_embedder
from rag_pipeline.core.embedding.models import TextEmbedder
from rag_pipeline.core.evaluation.catalogue import RunKey
from rag_pipeline.core.evaluation.evaluate import (
    REPORT_STYLES,
    EvalReport,
    PairedRow,
    RankRow,
    SummaryRow,
    compare,
    evaluate,
    recall_with_interval,
)
from rag_pipeline.core.evaluation.gold import GoldError, GoldQuery, validate_gold
from rag_pipeline.core.evaluation.tables import paired_rows_markdown
from rag_pipeline.core.index.builders import ChunkStats
from rag_pipeline.core.index.partition_build import build_partition
from rag_pipeline.core.index.store import PartitionIndex, load_partition
from rag_pipeline.core.ingest import DocumentRecord, extract_corpus
from rag_pipeline.core.ingest.corpus_export import export_python_reference
from rag_pipeline.core.retrieval.retriever import Retriever
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.core.text.markdown_table import markdown_table
from rag_pipeline.project_paths import DEFAULT_CORPUS_DIR, DEFAULT_EVAL_DIR

DEFAULT_TARGETS = (256, 384, 512)
BASELINE_TARGET = ChunkingSettings().target_chars
REPORTED_KS = (4, 20)
STRATEGY = ChunkingStrategy.HEADER


def target_label(target: int) -> str:
    """The name a target's partition is evaluated under: ``header@<target>``."""
    return f"{STRATEGY.value}@{target}"


def target_run(target: int) -> RunKey:
    """The default retriever (hybrid, default analyzer, duplicates collapsed) on a target."""
    return RunKey(target_label(target), Retriever.HYBRID)


def ranks_of(rows: Sequence[RankRow], chunker: str) -> list[int | None]:
    """The first-hit ranks of one chunker's run, in the order the queries were scored."""
    return [row.rank for row in rows if row.chunker == chunker]


@dataclass(frozen=True)
class TargetIndex:
    target: int
    index: PartitionIndex
    stats: ChunkStats
    embed_seconds: float


def build_target(records: Sequence[DocumentRecord], target: int, embedder: TextEmbedder,
                 root: Path) -> TargetIndex:
    """Chunks, embeds and indexes ``records`` at ``target`` characters into a warehouse under
    ``root``, publishes it and loads the partition back."""

    built = build_partition(Warehouse(root), records, STRATEGY, embedder,
                            ChunkingSettings(target_chars=target),
                            every_passed(256, lambda done, total: print(
                                f"  {target_label(target)}: embedded {done}/{total}",
                                file=sys.stderr, flush=True)))
    return TargetIndex(target, load_partition(root, STRATEGY.value, embedder.spec.key),
                       built.chunks, built.embedding.seconds)


def paired_against_baseline(report: EvalReport, targets: Sequence[int], baseline: int,
                            styles: Sequence[str]) -> list[PairedRow]:
    """Sign tests of every other target against ``baseline`` over the same queries, per style,
    at the reported ks."""
    base = target_run(baseline)
    base_ranks = ranks_of(report.ranks, base.chunker)
    return [row for target in targets if target != baseline
            for row in compare(target_run(target), base,
                               ranks_of(report.ranks, target_label(target)), base_ranks, styles)
            if row.k in REPORTED_KS]


def summary_markdown(stats: Mapping[int, ChunkStats], summary: Sequence[SummaryRow],
                     destroyed: Mapping[str, Sequence[str]], window: int) -> str:
    """One row per target and style: chunks, chunks over the window, gold lines destroyed,
    R@4 and R@20 with their intervals, MRR."""
    rows = []
    for row in summary:
        target = int(row.chunker.rsplit("@", 1)[1])
        rows.append([target, stats[target].chunks, stats[target].truncated,
                     len(destroyed[row.chunker]), row.style, row.queries, recall_with_interval(row, 4),
                     recall_with_interval(row, 20), f"{row.mrr:.3f}"])
    return markdown_table(["target", "chunks", f"over {window} wp", "destroyed", "style", "n",
                           "R@4 [95% CI]", "R@20 [95% CI]", "MRR"], rows)


@dataclass(frozen=True)
class TargetsReport:
    """What :func:`measure` found: per target its chunk statistics and embedding time, the
    evaluation of every target, and the paired tests against the baseline."""

    stats: dict[int, ChunkStats]
    embed_seconds: dict[int, float]
    report: EvalReport
    paired: list[PairedRow]


def measure(records: Sequence[DocumentRecord], queries: Sequence[GoldQuery],
            errors: Sequence[GoldError], targets: Sequence[int], baseline: int,
            embedder: TextEmbedder, root: Path) -> TargetsReport:
    """Builds every target's partition under ``root`` and scores ``queries`` on each with the
    default retriever; ``baseline`` must be one of ``targets``."""
    if baseline not in targets:
        raise ValueError(f"the baseline {baseline} is not among the targets {list(targets)}")
    built = {t: build_target(records, t, embedder, root / str(t)) for t in targets}
    report = evaluate({target_label(t): b.index for t, b in built.items()}, embedder, queries,
                      [], errors, [target_run(t) for t in targets])
    paired = paired_against_baseline(report, targets, baseline, [q.style.value for q in queries])
    return TargetsReport({t: b.stats for t, b in built.items()},
                         {t: b.embed_seconds for t, b in built.items()}, report, paired)


def run(corpus: Path, gold_path: Path, targets: Sequence[int], baseline: int) -> list[str]:
    """Measures with the first declared model and returns the printed lines."""
    spec = declared_models()[0]
    embedder = load_embedder(spec)
    records = extract_corpus(corpus).records
    canonical = {r.document_id: r.canonical_text for r in records if r.ok}
    queries, errors = validate_gold(load_gold(gold_path), canonical)
    with tempfile.TemporaryDirectory(prefix="chunk-targets-") as tmp:
        started = time.perf_counter()
        measured = measure(records, queries, errors, targets, baseline, embedder, Path(tmp))
        seconds = time.perf_counter() - started
    settings = target_run(baseline).settings()
    lines = [f"{len(canonical)} documents, {len({q.line_id for q in queries})} gold lines x "
             f"{len(REPORT_STYLES) - 1} styles ({len(errors)} gold errors); model {spec.key} "
             f"({spec.backend.value} {spec.precision.value}, window {spec.max_tokens}); chunker "
             f"{STRATEGY.value}; retriever {settings.retriever.value}, analyzer "
             f"{settings.analyzer.value}, fusion {settings.fusion.value}, dense weight "
             f"{settings.dense_weight:g} (RetrievalSettings())",
             "embedding: " + ", ".join(f"{t}: {measured.stats[t].chunks} chunks in "
                                       f"{measured.embed_seconds[t]:.0f} s" for t in targets)
             + f"; {seconds:.0f} s in all",
             "",
             summary_markdown(measured.stats, measured.report.summary, measured.report.destroyed,
                              spec.max_tokens)]
    if measured.paired:
        lines += ["", f"paired exact sign tests against {target_label(baseline)} "
                      "(wins: found within k only by a; losses: only by b)",
                  paired_rows_markdown(measured.paired)]
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    go_offline()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, nargs="+", default=list(DEFAULT_TARGETS),
                        help="Chunk target sizes in characters, each above the overlap setting "
                             "(64), which ChunkingSettings checks though header does not use it.")
    parser.add_argument("--baseline", type=int, default=BASELINE_TARGET,
                        help="The target the others are compared with (today's default).")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS_DIR,
                        help="The corpus folder (the bundled reference is exported there once).")
    parser.add_argument("--gold", type=Path, default=DEFAULT_EVAL_DIR / "gold.jsonl")
    args = parser.parse_args(argv)
    targets = list(dict.fromkeys(args.targets))
    if args.baseline not in targets:
        targets.append(args.baseline)
    if args.corpus == DEFAULT_CORPUS_DIR:
        export_python_reference(args.corpus)
    for line in run(args.corpus, args.gold, targets, args.baseline):
        print(line)


if __name__ == "__main__":
    main()
