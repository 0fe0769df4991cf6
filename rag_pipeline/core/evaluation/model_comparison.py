"""Two models on the same chunker and retriever, judged on the same queries: wins, losses and
an exact sign test, from the two models' evaluation reports."""

from __future__ import annotations

from collections.abc import Sequence

from rag_pipeline.core.evaluation.evaluate import EvalReport, PairedRow
from rag_pipeline.core.evaluation.metrics import paired_wins_losses, sign_test_p

KS = (4, 8, 20)


def compare_models(a: EvalReport, b: EvalReport, key_a: str, key_b: str,
                   ks: Sequence[int] = KS) -> list[PairedRow]:
    """One row per chunker x retriever both reports hold, per ``k``: ``a`` is
    ``<key_a> <chunker> <retriever>``; wins are queries only model A answers within ``k``."""
    ranks_a = {(r.chunker, r.retriever, r.query_id): r.rank for r in a.ranks}
    ranks_b = {(r.chunker, r.retriever, r.query_id): r.rank for r in b.ranks}
    runs = sorted({(c, r) for c, r, _ in ranks_a} & {(c, r) for c, r, _ in ranks_b})
    rows = []
    for chunker, retriever in runs:
        queries = sorted(q for c, r, q in ranks_a if (c, r) == (chunker, retriever)
                         and (c, r, q) in ranks_b)
        first = [ranks_a[(chunker, retriever, q)] for q in queries]
        second = [ranks_b[(chunker, retriever, q)] for q in queries]
        for k in ks:
            wins, losses = paired_wins_losses(first, second, k)
            rows.append(PairedRow(f"{key_a} {chunker} {retriever}",
                                  f"{key_b} {chunker} {retriever}", "all", k, wins, losses,
                                  sign_test_p(wins, losses)))
    return rows
