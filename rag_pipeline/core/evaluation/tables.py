"""The evaluation report as tables (Parquet / DuckDB), Markdown (UI, CLI) and JSON (CLI)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa

from rag_pipeline.core.evaluation.evaluate import (
    RECALL_KS,
    EvalReport,
    PairedRow,
    RankRow,
    SummaryRow,
    recall_with_interval,
)
from rag_pipeline.core.evaluation.gold import GoldError
from rag_pipeline.core.storage.row_tables import rows_table
from rag_pipeline.core.storage.table_names import EVAL_TABLES
from rag_pipeline.core.storage.warehouse import TableVersion, Warehouse
from rag_pipeline.core.text.markdown_table import markdown_table

RANKS_SCHEMA = pa.schema([
    ("chunker", pa.string()), ("retriever", pa.string()), ("query_id", pa.string()),
    ("gold_id", pa.string()), ("style", pa.string()), ("rank", pa.int32()),
])
SUMMARY_SCHEMA = pa.schema(
    [("chunker", pa.string()), ("retriever", pa.string()), ("style", pa.string()),
     ("queries", pa.int64())]
    + [(f"recall@{k}{suffix}", pa.float64()) for k in RECALL_KS for suffix in ("", "_low", "_high")]
    + [("mrr", pa.float64()), ("destroyed", pa.int64())])
PAIRED_SCHEMA = pa.schema([
    ("a", pa.string()), ("b", pa.string()), ("style", pa.string()), ("k", pa.int32()),
    ("wins", pa.int64()),
    ("losses", pa.int64()), ("p", pa.float64()),
])
SWEEP_SCHEMA = pa.schema([
    ("cut", pa.float64()), ("in_correct", pa.int64()), ("in_wrong", pa.int64()),
    ("in_refused", pa.int64()), ("ood_bluffs", pa.int64()), ("ood_bluffs_near", pa.int64()),
    ("ood_bluffs_off", pa.int64()), ("recommended", pa.bool_()),
])
GOLD_ERRORS_SCHEMA = pa.schema([("gold_id", pa.string()), ("reason", pa.string())])


def _line_id(row: RankRow | GoldError) -> str:
    return row.line_id


def _recall_columns() -> dict[str, Callable[[SummaryRow], float]]:
    """``recall@k``, ``recall@k_low`` and ``recall@k_high`` from a row's two mappings."""
    columns: dict[str, Callable[[SummaryRow], float]] = {}
    for k in RECALL_KS:
        columns[f"recall@{k}"] = lambda row, k=k: row.recall[k]
        columns[f"recall@{k}_low"] = lambda row, k=k: row.ci95[k][0]
        columns[f"recall@{k}_high"] = lambda row, k=k: row.ci95[k][1]
    return columns


def ranks_table(report: EvalReport) -> pa.Table:
    return rows_table(report.ranks, RANKS_SCHEMA, computed={"gold_id": _line_id})


def summary_table(report: EvalReport) -> pa.Table:
    return rows_table(report.summary, SUMMARY_SCHEMA, computed=_recall_columns())


def paired_table(report: EvalReport) -> pa.Table:
    return rows_table(report.paired, PAIRED_SCHEMA)


def sweep_table(report: EvalReport) -> pa.Table:
    return rows_table(report.sweep, SWEEP_SCHEMA, computed={
        "recommended": lambda row: row.cut == report.recommended_cut})


def gate_cv_table(report: EvalReport) -> pa.Table:
    rows = report.gate_cv
    return pa.table({
        "signal": pa.array([r.signal for r in rows], pa.string()),
        "rule": pa.array([r.rule for r in rows], pa.string()),
        "cut_fold0": pa.array([r.cut_fold0 for r in rows], pa.float64()),
        "cut_fold1": pa.array([r.cut_fold1 for r in rows], pa.float64()),
        "in_total": pa.array([r.in_total for r in rows], pa.int64()),
        "in_refused": pa.array([r.in_refused for r in rows], pa.int64()),
        "in_correct": pa.array([r.in_correct for r in rows], pa.int64()),
        "ood_total": pa.array([r.ood_total for r in rows], pa.int64()),
        "ood_bluffs": pa.array([r.ood_bluffs for r in rows], pa.int64()),
    })


def gold_errors_table(report: EvalReport) -> pa.Table:
    return rows_table(report.gold_errors, GOLD_ERRORS_SCHEMA, computed={"gold_id": _line_id})


def summary_markdown(report: EvalReport) -> str:
    return markdown_table(
        ["chunker", "retriever", "style", "n", "R@1", "R@4 [95% CI]", "R@8", "R@20 [95% CI]",
         "MRR", "destroyed"],
        [[r.chunker, r.retriever, r.style, r.queries, f"{r.recall[1]:.3f}", recall_with_interval(r, 4),
          f"{r.recall[8]:.3f}", recall_with_interval(r, 20), f"{r.mrr:.3f}", r.destroyed]
         for r in report.summary])


def p_value(p: float) -> str:
    """Four decimals, or two significant digits below 0.0001 (where four decimals read 0)."""
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def paired_rows_markdown(rows: Sequence[PairedRow]) -> str:
    """One row per comparison: wins are the queries only ``a`` finds within ``k``, losses the
    ones only ``b`` finds, and the exact sign test's p (:func:`p_value`)."""
    return markdown_table(
        ["a", "b", "style", "k", "wins (a only)", "losses (b only)", "sign test p"],
        [[r.a, r.b, r.style, r.k, r.wins, r.losses, p_value(r.p)] for r in rows])


def paired_json(rows: Sequence[PairedRow]) -> list[dict]:
    """The rows of :func:`paired_rows_markdown` as ``--json`` prints them."""
    return [{"a": r.a, "b": r.b, "style": r.style, "k": r.k, "wins": r.wins,
             "losses": r.losses, "p": r.p} for r in rows]


def paired_markdown(report: EvalReport) -> str:
    return paired_rows_markdown(report.paired)


def gate_cv_markdown(report: EvalReport) -> str:
    return markdown_table(
        ["signal", "rule", "cut (fold 0 / 1)", "in: refused", "in: correct", "ood: bluffs"],
        [[r.signal, r.rule, f"{r.cut_fold0:.4f} / {r.cut_fold1:.4f}",
          f"{r.in_refused} / {r.in_total}", f"{r.in_correct} / {r.in_total}",
          f"{r.ood_bluffs} / {r.ood_total}"] for r in report.gate_cv])


def sweep_markdown(report: EvalReport) -> str:
    return markdown_table(
        ["cut", "in: correct", "in: wrong", "in: refused", "ood: bluffs (near/off)", ""],
        [[f"{r.cut:.3f}", r.in_correct, r.in_wrong, r.in_refused,
          f"{r.ood_bluffs} ({r.ood_bluffs_near}/{r.ood_bluffs_off})",
          "recommended" if r.cut == report.recommended_cut else ""] for r in report.sweep])


def report_json(report: EvalReport) -> dict:
    return {
        "queries": report.queries,
        "ood_queries": report.ood_queries,
        "gold_errors": [{"id": e.line_id, "reason": e.reason} for e in report.gold_errors],
        "destroyed": report.destroyed,
        "summary": [{
            "chunker": r.chunker, "retriever": r.retriever, "style": r.style,
            "queries": r.queries,
            **{f"recall@{k}": r.recall[k] for k in RECALL_KS}, "mrr": r.mrr,
            "destroyed": r.destroyed,
            "ci95": {f"recall@{k}": list(r.ci95[k]) for k in RECALL_KS}} for r in report.summary],
        "paired": paired_json(report.paired),
        "sweep": [{"cut": r.cut, "in_correct": r.in_correct, "in_wrong": r.in_wrong,
                   "in_refused": r.in_refused, "ood_bluffs": r.ood_bluffs,
                   "ood_bluffs_near": r.ood_bluffs_near, "ood_bluffs_off": r.ood_bluffs_off}
                  for r in report.sweep],
        "recommended_cut": report.recommended_cut,
        "cut_rule": report.cut_rule,
        "budget_cut": report.budget_cut,
        "gate_cv": [{"signal": r.signal, "rule": r.rule, "cuts": [r.cut_fold0, r.cut_fold1],
                     "in_total": r.in_total, "in_refused": r.in_refused,
                     "in_correct": r.in_correct, "ood_total": r.ood_total,
                     "ood_bluffs": r.ood_bluffs} for r in report.gate_cv],
        "ann": [{"chunker": a.chunker, "queries": a.queries, "k": a.k,
                 f"dense_recall@{a.k}": a.dense_recall, f"worst_recall@{a.k}": a.worst_recall,
                 "same_sources": a.same_sources} for a in report.ann],
        "timings_s": {k: round(v, 3) for k, v in report.timings.items()},
    }


def write_report_tables(warehouse: Warehouse, report: EvalReport,
                        model_key: str) -> dict[str, tuple[TableVersion, pa.Table]]:
    """Writes every table of ``report`` into ``model_key``'s partition, each recording the
    generations and the gold and out-of-domain files it scored, and refreshes the DuckDB
    snapshot; returns each table's version and rows."""
    from rag_pipeline.core.index.query_db import publish_query_db

    tables = {"eval_ranks": ranks_table(report), "eval_summary": summary_table(report),
              "eval_paired": paired_table(report), "eval_sweep": sweep_table(report),
              "eval_gold_errors": gold_errors_table(report), "eval_gate_cv": gate_cv_table(report)}
    written = {name: (warehouse.write(name, tables[name], {"model": model_key},
                                      inputs={**report.generations, **report.sets}),
                tables[name])
               for name in EVAL_TABLES}
    publish_query_db(warehouse)
    return written
