"""Tests for ``rag_pipeline.core.eval_report``: the headline rows and the standalone report."""

from __future__ import annotations

from html.parser import HTMLParser

from rag_pipeline.core.eval_report import HeadlineRow, headline_rows, report_html
from rag_pipeline.core.evaluation import EvalReport, PairedRow, SummaryRow


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
