"""Two models' evaluation reports compared on the same queries."""

from __future__ import annotations

from rag_pipeline.core.evaluation.evaluate import EvalReport, PairedRow, RankRow
from rag_pipeline.core.evaluation.model_comparison import compare_models


def _report(ranks: list[int | None]) -> EvalReport:
    rows = [RankRow("header", "hybrid", f"q{i}", f"l{i}", "question", r) for i, r in enumerate(ranks)]
    return EvalReport(len(ranks), 0, [], {}, rows, [], [], [], None, "")


def test_wins_losses_and_sign_test_per_k():
    a = _report([1, 1, 1, 5, None, 2])
    b = _report([None, None, 1, 1, 1, 30])
    rows = compare_models(a, b, "fp32", "int8", ks=(4, 20))
    # k = 4: a only on q0, q1, q5; b only on q3, q4 -> 3 / 2, p = 1.0.
    # k = 20: a only on q0, q1, q5 (b's 30 misses); b only on q4 -> 3 / 1, p = 0.625.
    assert rows == [PairedRow("fp32 header hybrid", "int8 header hybrid", "all", 4, 3, 2, 1.0),
                    PairedRow("fp32 header hybrid", "int8 header hybrid", "all", 20, 3, 1, 0.625)]
