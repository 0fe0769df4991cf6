"""The evaluation's headline, where a person sees it: rows for the asset page's table, and one
standalone HTML report (summary, paired tests, the refusal sweep chart) per model."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from pathlib import Path

from rag_pipeline.core.embedding.model_key import ModelKey
from rag_pipeline.core.evaluation.evaluate import EvalReport, recall_with_interval

HEADLINE_RETRIEVER = "hybrid"
REPORT_FILE = "report.html"


def report_path(data_dir: Path, model_key: str) -> Path:
    """Where the evaluation of ``model_key`` writes its HTML report (and ``serve`` reads it):
    ``<data_dir>/eval/runs/<model_key>/report.html``. Raises ``ValueError`` for a string that is
    not a model key (``name@fingerprint``), so no request can name another file."""
    return Path(data_dir) / "eval" / "runs" / str(ModelKey.parse(model_key)) / REPORT_FILE


@dataclass(frozen=True)
class HeadlineRow:
    """One chunker (and query style) under the default retriever: recall at 4 and 20 with Wilson
    95 % intervals, MRR and answers destroyed by chunking."""

    chunker: str
    style: str
    queries: int
    recall_at_4: str
    recall_at_20: str
    mrr: float
    destroyed: int


CHART_FILE = "refusal_sweep.png"


@dataclass(frozen=True)
class ReportFiles:
    """Where :func:`write_report_files` wrote the report page and its chart, and the chart."""

    report: Path
    chart: Path
    chart_png: bytes


def write_report_files(data_dir: Path, report: EvalReport, model_key: str) -> ReportFiles:
    """The refusal sweep's chart (:data:`CHART_FILE`) and the HTML report embedding it, beside
    each other at :func:`report_path` (where ``serve`` reads the report)."""
    from rag_pipeline.core.evaluation.catalogue import PRODUCTION_CHUNKER
    from rag_pipeline.core.evaluation.sweep_chart import sweep_chart_png

    png = sweep_chart_png(report.sweep, report.recommended_cut,
                          f"Refusal sweep, {PRODUCTION_CHUNKER} x {HEADLINE_RETRIEVER}, {model_key}")
    page = report_path(data_dir, model_key)
    chart = page.parent / CHART_FILE
    chart.parent.mkdir(parents=True, exist_ok=True)
    chart.write_bytes(png)
    page.write_text(report_html(report, model_key, png), encoding="utf-8")
    return ReportFiles(page, chart, png)


def headline_rows(report: EvalReport) -> list[HeadlineRow]:
    """The summary rows of the default retriever, every chunker and style, in report order."""
    return [HeadlineRow(chunker=row.chunker, style=getattr(row, "style", "all"),
                        queries=row.queries, recall_at_4=recall_with_interval(row, 4),
                        recall_at_20=recall_with_interval(row, 20), mrr=round(row.mrr, 3),
                        destroyed=row.destroyed)
            for row in report.summary if row.retriever == HEADLINE_RETRIEVER]


def _table(headers: list[str], rows: list[list[object]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                   for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def report_html(report: EvalReport, model_key: str, sweep_png: bytes) -> str:
    """One self-contained page: headline, every summary row, paired tests, the sweep chart."""
    headline = headline_rows(report)
    summary = [[r.chunker, getattr(r, "style", "all"), r.retriever, r.queries,
                *(recall_with_interval(r, k) for k in sorted(r.recall)), f"{r.mrr:.3f}", r.destroyed]
               for r in report.summary]
    ks = sorted(report.summary[0].recall) if report.summary else []
    paired = [[p.a, p.b, getattr(p, "style", "all"), p.k, p.wins, p.losses, f"{p.p:.4f}"]
              for p in report.paired]
    image = base64.b64encode(sweep_png).decode("ascii")
    generations = ", ".join(f"{c}: {g}" for c, g in sorted(report.generations.items()))
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Retrieval evaluation, {html.escape(model_key)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:80em}}table{{border-collapse:collapse;
margin:1em 0}}td,th{{border:1px solid #ccc;padding:.25em .6em;text-align:right}}
th{{background:#f3f3f3}}td:first-child,th:first-child{{text-align:left}}</style></head><body>
<h1>Retrieval evaluation: {html.escape(model_key)}</h1>
<p>{report.queries} in-domain queries, {report.ood_queries} out-of-domain, {len(report.gold_errors)}
gold-set errors. Generations: {html.escape(generations or "-")}.</p>
<h2>Headline: {HEADLINE_RETRIEVER} retriever</h2>
{_table(["chunker", "style", "queries", "R@4 [95 % CI]", "R@20 [95 % CI]", "MRR", "destroyed"],
        [[h.chunker, h.style, h.queries, h.recall_at_4, h.recall_at_20, h.mrr, h.destroyed]
         for h in headline])}
<h2>Refusal sweep</h2>
<p>Recommended cut: {report.recommended_cut} ({html.escape(report.cut_rule)})</p>
<img alt="refusal sweep" src="data:image/png;base64,{image}">
<h2>Every summary row</h2>
{_table(["chunker", "style", "retriever", "queries", *(f"R@{k} [95 % CI]" for k in ks), "MRR",
         "destroyed"], summary)}
<h2>Paired sign tests</h2>
{_table(["a", "b", "style", "k", "wins", "losses", "p"], paired)}
</body></html>
"""
