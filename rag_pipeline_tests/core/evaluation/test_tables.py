"""The report's Markdown: p-values stay readable when small, and one formatter of paired rows
serves the evaluation, the chunk-target benchmark and the model comparison."""

from __future__ import annotations

from rag_pipeline.core.evaluation.evaluate import PairedRow, SummaryRow, recall_with_interval
from rag_pipeline.core.evaluation.tables import p_value, paired_json, paired_rows_markdown


def test_p_value_keeps_small_p_values_readable():
    assert [p_value(p) for p in (1.0, 0.0414, 0.0001, 0.0000998, 5.2e-06)] == [
        "1.0000", "0.0414", "0.0001", "1.0e-04", "5.2e-06"]


def test_paired_rows_as_markdown_and_as_json():
    rows = [PairedRow("header@256/hybrid", "header@512/hybrid", "all", 4, 3, 0, 0.25),
            PairedRow("header/hybrid", "blind/hybrid", "ticket", 20, 9, 1, 5.2e-06)]
    assert paired_rows_markdown(rows) == (
        "| a | b | style | k | wins (a only) | losses (b only) | sign test p |\n"
        "|---|---|---|---|---|---|---|\n"
        "| header@256/hybrid | header@512/hybrid | all | 4 | 3 | 0 | 0.2500 |\n"
        "| header/hybrid | blind/hybrid | ticket | 20 | 9 | 1 | 5.2e-06 |")
    assert paired_json(rows[:1]) == [{"a": "header@256/hybrid", "b": "header@512/hybrid",
                                      "style": "all", "k": 4, "wins": 3, "losses": 0, "p": 0.25}]


def test_recall_with_its_interval_at_three_decimals():
    row = SummaryRow("header", "hybrid", "all", 2, {4: 0.5}, {4: (0.09453, 0.90547)}, 0.75, 0)
    assert recall_with_interval(row, 4) == "0.500 [0.095, 0.905]"
