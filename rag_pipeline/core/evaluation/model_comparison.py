"""Two models on the same chunker and retriever, judged on the same queries: wins, losses and
an exact sign test, from the two models' evaluation reports."""

from __future__ import annotations

from collections.abc import Sequence

from rag_pipeline.core.evaluation.evaluate import EvalReport, PairedRow
from rag_pipeline.core.evaluation.gold import QueryStyle
from rag_pipeline.core.evaluation.metrics import paired_wins_losses, sign_test_p

KS = (4, 8, 20)


def compare_models(a: EvalReport, b: EvalReport, key_a: str, key_b: str,
                   ks: Sequence[int] = KS) -> list[PairedRow]:
    """One row per chunker x retriever both reports hold, per query style (``all``, then each
    :class:`~rag_pipeline.core.evaluation.gold.QueryStyle`), per ``k``: ``a`` is
    ``<key_a> <chunker> <retriever>``; wins are queries only model A answers within ``k``."""
    ranks_a = {(r.chunker, r.retriever, r.query_id): r for r in a.ranks}
    ranks_b = {(r.chunker, r.retriever, r.query_id): r.rank for r in b.ranks}
    runs = sorted({(c, r) for c, r, _ in ranks_a} & {(c, r) for c, r, _ in ranks_b})
    rows = []
    for chunker, retriever in runs:
        for style in ("all", *(s.value for s in QueryStyle)):
            queries = sorted(q for (c, r, q), row in ranks_a.items()
                             if (c, r) == (chunker, retriever) and (c, r, q) in ranks_b
                             and style in ("all", row.style))
            if not queries:
                continue
            first = [ranks_a[(chunker, retriever, q)].rank for q in queries]
            second = [ranks_b[(chunker, retriever, q)] for q in queries]
            for k in ks:
                wins, losses = paired_wins_losses(first, second, k)
                rows.append(PairedRow(f"{key_a} {chunker} {retriever}",
                                      f"{key_b} {chunker} {retriever}", style, k, wins, losses,
                                      sign_test_p(wins, losses)))
    return rows
