"""Tests for ``rag_pipeline.core.evaluation.report``: the headline rows and the standalone report."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from rag_pipeline.core.evaluation.evaluate import EvalReport, PairedRow, SummaryRow
from rag_pipeline.core.evaluation.report import (
    HeadlineRow,
    headline_rows,
    report_html,
    report_path,
    write_report_files,
)


def _row(chunker: str, retriever: str, r4: float, style: str = "all") -> SummaryRow:
    return SummaryRow(chunker=chunker, retriever=retriever, style=style, queries=64,
                      recall={4: r4, 20: 0.844}, ci95={4: (0.632, 0.840), 20: (0.736, 0.913)},
                      mrr=0.6321, destroyed=0)


REPORT = EvalReport(
    queries=64, ood_queries=30, gold_errors=[], destroyed={}, ranks=[],
    summary=[_row("header", "hybrid", 0.75), _row("header", "hybrid", 0.5, "ticket"),
             _row("header", "dense", 0.734), _row("blind", "hybrid", 0.531)],
    paired=[PairedRow("header", "blind", "all", 4, 15, 1, 0.0005)], sweep=[], recommended_cut=0.625,
    cut_rule="most right outcomes", generations={"header": "20261130T120000Z-abcd1234"})


def test_headline_rows_are_the_default_retriever_s_with_intervals():
    assert headline_rows(REPORT) == [
        HeadlineRow("header", "all", 64, "0.750 [0.632, 0.840]", "0.844 [0.736, 0.913]", 0.632, 0),
        HeadlineRow("header", "ticket", 64, "0.500 [0.632, 0.840]", "0.844 [0.736, 0.913]", 0.632,
                    0),
        HeadlineRow("blind", "all", 64, "0.531 [0.632, 0.840]", "0.844 [0.736, 0.913]", 0.632, 0)]


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.cells: list[str] = []
        self.images = 0

    def handle_starttag(self, tag, attrs):
        self.images += tag == "img" and dict(attrs)["src"].startswith("data:image/png;base64,")

    def handle_data(self, data):
        if data.strip():
            self.cells.append(data.strip())


def test_the_report_is_one_self_contained_page():
    page = _Cells()
    page.feed(report_html(REPORT, "m@1234abcd", b"\x89PNG fake"))
    assert page.images == 1
    assert "Retrieval evaluation: m@1234abcd" in page.cells
    assert page.cells[page.cells.index("0.750 [0.632, 0.840]") - 3:][:4] == [
        "header", "all", "64", "0.750 [0.632, 0.840]"]
    assert "Recommended cut: 0.625 (most right outcomes)" in page.cells


def test_the_report_page_and_its_chart_are_written_beside_each_other(tmp_path: Path):
    files = write_report_files(tmp_path, REPORT, "m@1234abcd")
    folder = tmp_path / "eval" / "runs" / "m@1234abcd"
    assert (files.report, files.chart) == (folder / "report.html", folder / "refusal_sweep.png")
    assert files.chart.read_bytes() == files.chart_png
    assert files.chart_png.startswith(b"\x89PNG\r\n\x1a\n")
    assert files.report.read_text(encoding="utf-8") == report_html(REPORT, "m@1234abcd",
                                                                   files.chart_png)


def test_summary_and_paired_tables_carry_the_style_column():
    from dataclasses import replace

    from rag_pipeline.core.evaluation.evaluate import RECALL_KS
    from rag_pipeline.core.evaluation.tables import paired_table, summary_table

    row = SummaryRow(chunker="header", retriever="hybrid", style="ticket", queries=64,
                     recall={k: 0.5 for k in RECALL_KS}, ci95={k: (0.25, 0.75) for k in RECALL_KS},
                     mrr=0.5, destroyed=1)
    table = summary_table(replace(REPORT, summary=[row]))
    expected = {"chunker": "header", "retriever": "hybrid", "style": "ticket", "queries": 64}
    for k in RECALL_KS:
        expected |= {f"recall@{k}": 0.5, f"recall@{k}_low": 0.25, f"recall@{k}_high": 0.75}
    assert table.to_pylist() == [expected | {"mrr": 0.5, "destroyed": 1}]
    assert paired_table(REPORT).to_pylist() == [
        {"a": "header", "b": "blind", "style": "all", "k": 4, "wins": 15, "losses": 1, "p": 0.0005}]


def test_the_report_path_is_inside_the_data_folder_for_a_model_key_only(tmp_path: Path):
    assert report_path(tmp_path, "all-MiniLM-L6-v2@53aa5117") == (
        tmp_path / "eval" / "runs" / "all-MiniLM-L6-v2@53aa5117" / "report.html")
    for bad in ("../gold", "m", "m@x/../..", ".hidden@1234"):
        with pytest.raises(ValueError, match="not a model key"):
            report_path(tmp_path, bad)
