"""Two models' evaluation reports compared on the same queries."""

from __future__ import annotations

from rag_pipeline.core.evaluation.evaluate import EvalReport, PairedRow, RankRow
from rag_pipeline.core.evaluation.model_comparison import compare_models


def _report(ranks: list[int | None]) -> EvalReport:
    """Queries q0, q1, ... of the ``question`` style, but q4 and q5 of the ``ticket`` style."""
    rows = [RankRow("header", "hybrid", f"q{i}", f"l{i}", "ticket" if i >= 4 else "question", r)
            for i, r in enumerate(ranks)]
    return EvalReport(len(ranks), 0, [], {}, rows, [], [], [], None, "")


def test_wins_losses_and_sign_test_per_style_and_k():
    a = _report([1, 1, 1, 5, None, 2])
    b = _report([None, None, 1, 1, 1, 30])
    rows = compare_models(a, b, "fp32", "int8", ks=(4, 20))
    pair = ("fp32 header hybrid", "int8 header hybrid")
    # All: k = 4: a only on q0, q1, q5; b only on q3, q4 -> 3 / 2, p = 1.0.
    # k = 20: a only on q0, q1, q5 (b's 30 misses); b only on q4 -> 3 / 1, p = 0.625.
    # Questions (q0-q3): k = 4: 2 / 1, p = 1.0; k = 20: 2 / 0, p = 0.5.
    # Tickets (q4, q5): k = 4: 1 / 1, p = 1.0; k = 20: 1 / 1, p = 1.0.
    assert rows == [PairedRow(*pair, "all", 4, 3, 2, 1.0), PairedRow(*pair, "all", 20, 3, 1, 0.625),
                    PairedRow(*pair, "question", 4, 2, 1, 1.0),
                    PairedRow(*pair, "question", 20, 2, 0, 0.5),
                    PairedRow(*pair, "ticket", 4, 1, 1, 1.0),
                    PairedRow(*pair, "ticket", 20, 1, 1, 1.0)]
