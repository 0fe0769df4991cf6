"""Retrieval metrics and the statistics that say how far to trust them.

Two families live here. Rank-based metrics take, per query, the 1-based rank of the first hit
(``None`` when nothing was found) and answer "did the right passage come back, and how high":
recall@k, MRR, a Wilson interval around recall, and an exact sign test for comparing two
systems on the same queries. Qrels-based metrics take a ranked list of ids and graded judgements
(``{doc_id: gain}``) for one query and follow trec_eval: nDCG@k, recall@k and reciprocal rank.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import TypeVar

__all__ = [
    "RecallSummary",
    "first_hit_rank",
    "mean_reciprocal_rank",
    "mrr_at_k_qrels",
    "ndcg_at_k",
    "paired_wins_losses",
    "recall_at_k",
    "recall_at_k_qrels",
    "sign_test_p",
    "summarise_recall",
    "wilson_interval",
]


@dataclass(frozen=True)
class RecallSummary:
    """Recall@k over a query set with its Wilson score interval.

    Attributes:
        n: Number of queries.
        hits: Queries whose first hit ranks at or above k.
        recall: ``hits / n``.
        low: Lower bound of the Wilson score interval (Wilson 1927) for ``recall``.
        high: Upper bound of that interval.
    """

    n: int
    hits: int
    recall: float
    low: float
    high: float


def _check_k(k: int, name: str = "k") -> None:
    if k < 1:
        raise ValueError(f"{name} must be a positive rank cutoff, got {k}")


def _check_ranks(ranks: Sequence[int | None]) -> None:
    for rank in ranks:
        if rank is not None and rank < 1:
            raise ValueError(f"ranks are 1-based or None, got {rank}")


def _check_nonempty_ranks(ranks: Sequence[int | None]) -> None:
    if len(ranks) == 0:
        raise ValueError("ranks is empty: a metric over no queries is undefined")
    _check_ranks(ranks)


def _check_unique(ranked_ids: Sequence[str]) -> None:
    if len(set(ranked_ids)) != len(ranked_ids):
        raise ValueError("ranked_ids contains duplicate ids; trec_eval rejects duplicate docs too")


Id = TypeVar("Id")


def _hits_at_k(ranks: Sequence[int | None], k: int) -> int:
    return sum(1 for rank in ranks if rank is not None and rank <= k)


def first_hit_rank(ranked_ids: Sequence[Id], is_hit: Callable[[Id], bool]) -> int | None:
    """Return the 1-based rank of the first id that ``is_hit`` accepts.

    Args:
        ranked_ids: Retrieved ids (document ids, or a partition's rows), best first.
        is_hit: Predicate telling whether an id answers the query.

    Returns:
        The rank of the first hit, or ``None`` when no id is a hit.
    """
    for rank, doc_id in enumerate(ranked_ids, start=1):
        if is_hit(doc_id):
            return rank
    return None


def recall_at_k(ranks: Sequence[int | None], k: int) -> float:
    """Share of queries whose first hit ranks at or above ``k`` (success@k, hit rate at k).

    Args:
        ranks: Per query, the 1-based rank of the first hit, or ``None`` for a miss.
        k: Rank cutoff, at least 1.

    Returns:
        ``|{q : rank_q is not None and rank_q <= k}| / |ranks|``.

    Raises:
        ValueError: If ``ranks`` is empty, a rank is below 1, or ``k`` is below 1.
    """
    _check_k(k)
    _check_nonempty_ranks(ranks)
    return _hits_at_k(ranks, k) / len(ranks)


def mean_reciprocal_rank(ranks: Sequence[int | None], cutoff: int | None = None) -> float:
    """Mean reciprocal rank of the first hit (Voorhees 1999, TREC-8 question answering track).

    Args:
        ranks: Per query, the 1-based rank of the first hit, or ``None`` for a miss.
        cutoff: If given, a first hit ranked below ``cutoff`` scores 0 (MRR@cutoff).

    Returns:
        ``mean_q 1/rank_q``, with 0 for a miss and, when ``cutoff`` is given, for ``rank_q > cutoff``.

    Raises:
        ValueError: If ``ranks`` is empty, a rank is below 1, or ``cutoff`` is below 1.
    """
    if cutoff is not None:
        _check_k(cutoff, "cutoff")
    _check_nonempty_ranks(ranks)
    total = 0.0
    for rank in ranks:
        if rank is None or (cutoff is not None and rank > cutoff):
            continue
        total += 1.0 / rank
    return total / len(ranks)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (Wilson 1927, JASA 22:209-212).

    The closed form, without continuity correction (what
    ``scipy.stats.binomtest(successes, n).proportion_ci(method="wilson")`` gives; scipy.stats is
    not imported for it: its import took 1.2 s of every evaluation run).

    Args:
        successes: Number of successes, ``0 <= successes <= n``.
        n: Number of trials, at least 1.
        confidence: Two-sided confidence level, strictly between 0 and 1.

    Returns:
        ``(low, high)``; ``low`` is exactly 0.0 when ``successes == 0`` and ``high`` exactly 1.0
        when ``successes == n``.

    Raises:
        ValueError: If ``n`` is below 1, ``successes`` is outside ``[0, n]``, or ``confidence``
            is outside ``(0, 1)``.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in [0, n={n}], got {successes}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    upper = 0.5 + confidence / 2
    if upper >= 1.0:
        raise ValueError(f"confidence {confidence!r} is too close to 1 for a float quantile")
    z = NormalDist().inv_cdf(upper)
    centre = (successes + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * math.sqrt(successes * (n - successes) / n + z * z / 4)
    low = 0.0 if successes == 0 else max(centre - half, 0.0)
    high = 1.0 if successes == n else min(centre + half, 1.0)
    return low, high


def paired_wins_losses(
    ranks_a: Sequence[int | None], ranks_b: Sequence[int | None], k: int
) -> tuple[int, int]:
    """Count the discordant pairs of two systems judged on the same queries at cutoff ``k``.

    Args:
        ranks_a: Per query, system A's 1-based first-hit rank, or ``None``.
        ranks_b: System B's ranks for the same queries, in the same order.
        k: Rank cutoff, at least 1.

    Returns:
        ``(wins, losses)``: queries where A hits within ``k`` and B does not, and the reverse.
        Queries where both hit or both miss are ties and are not counted.

    Raises:
        ValueError: If the two sequences differ in length, a rank is below 1, or ``k`` is below 1.
    """
    _check_k(k)
    if len(ranks_a) != len(ranks_b):
        raise ValueError(
            f"paired comparison needs the same queries: {len(ranks_a)} ranks vs {len(ranks_b)}"
        )
    _check_ranks(ranks_a)
    _check_ranks(ranks_b)
    wins = losses = 0
    for rank_a, rank_b in zip(ranks_a, ranks_b, strict=True):
        hit_a = rank_a is not None and rank_a <= k
        hit_b = rank_b is not None and rank_b <= k
        if hit_a and not hit_b:
            wins += 1
        elif hit_b and not hit_a:
            losses += 1
    return wins, losses


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact sign test on the discordant pairs (Dixon & Mood 1946, JASA 41:557-566).

    Under the null hypothesis each discordant query is a win with probability 1/2, so the p-value
    is twice the binomial tail at the smaller count, at most 1, in exact arithmetic (what
    ``scipy.stats.binomtest(wins, wins + losses, 0.5, alternative="two-sided").pvalue`` gives).

    Args:
        wins: Queries where system A hits and system B misses.
        losses: Queries where system B hits and system A misses.

    Returns:
        The two-sided p-value; 1.0 when there are no discordant pairs.

    Raises:
        ValueError: If ``wins`` or ``losses`` is negative.
    """
    if wins < 0 or losses < 0:
        raise ValueError(f"wins and losses must be non-negative, got {wins} and {losses}")
    wins, losses = int(wins), int(losses)
    if wins == losses:  # (0, 0) too: the two tails hold every outcome
        return 1.0
    n = wins + losses
    tail = term = 1  # C(n, 0)
    for i in range(min(wins, losses)):
        term = term * (n - i) // (i + 1)  # C(n, i + 1), exactly
        tail += term
    return float(Fraction(2 * tail, 2 ** n))


def summarise_recall(ranks: Sequence[int | None], k: int) -> RecallSummary:
    """Recall@k with its 95% Wilson score interval (Wilson 1927).

    Args:
        ranks: Per query, the 1-based rank of the first hit, or ``None`` for a miss.
        k: Rank cutoff, at least 1.

    Returns:
        The query count, the hit count, recall@k and the interval bounds.

    Raises:
        ValueError: If ``ranks`` is empty, a rank is below 1, or ``k`` is below 1.
    """
    recall = recall_at_k(ranks, k)
    hits = _hits_at_k(ranks, k)
    low, high = wilson_interval(hits, len(ranks))
    return RecallSummary(n=len(ranks), hits=hits, recall=recall, low=low, high=high)


def ndcg_at_k(ranked_ids: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k with linear gain (Jarvelin & Kekalainen 2002), as trec_eval's ``ndcg_cut``.

    ``DCG@k = sum_{i=1..k} rel_i / log2(i + 1)`` where ``rel_i`` is the qrels gain of the id at
    rank ``i`` (0 when unjudged); the ideal DCG applies the same sum to the qrels' gains sorted in
    descending order. As in trec_eval, only positive gains contribute.

    Args:
        ranked_ids: Retrieved ids for one query, best first, without duplicates.
        qrels: Judged gains for that query, ``{doc_id: gain}``.
        k: Rank cutoff, at least 1.

    Returns:
        ``DCG@k / IDCG@k``, or 0.0 when the qrels hold no positive gain.

    Raises:
        ValueError: If ``k`` is below 1 or ``ranked_ids`` has duplicates.
    """
    _check_k(k)
    _check_unique(ranked_ids)
    ideal_gains = sorted((gain for gain in qrels.values() if gain > 0), reverse=True)[:k]
    if not ideal_gains:
        return 0.0
    ideal = sum(gain / math.log2(rank + 1) for rank, gain in enumerate(ideal_gains, start=1))
    dcg = 0.0
    for rank, doc_id in enumerate(ranked_ids[:k], start=1):
        gain = qrels.get(doc_id, 0)
        if gain > 0:
            dcg += gain / math.log2(rank + 1)
    return dcg / ideal


def recall_at_k_qrels(ranked_ids: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Share of the relevant ids retrieved in the top ``k``, as trec_eval's ``recall_k``.

    An id is relevant when its qrels gain is positive.

    Args:
        ranked_ids: Retrieved ids for one query, best first, without duplicates.
        qrels: Judged gains for that query, ``{doc_id: gain}``.
        k: Rank cutoff, at least 1.

    Returns:
        ``|relevant & top_k| / |relevant|``, or 0.0 when nothing is relevant.

    Raises:
        ValueError: If ``k`` is below 1 or ``ranked_ids`` has duplicates.
    """
    _check_k(k)
    _check_unique(ranked_ids)
    relevant = {doc_id for doc_id, gain in qrels.items() if gain > 0}
    if not relevant:
        return 0.0
    found = sum(1 for doc_id in ranked_ids[:k] if doc_id in relevant)
    return found / len(relevant)


def mrr_at_k_qrels(ranked_ids: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Reciprocal rank of the first relevant id within the top ``k`` (Voorhees 1999).

    trec_eval's ``recip_rank`` on a run truncated to ``k``; an id is relevant when its qrels gain
    is positive.

    Args:
        ranked_ids: Retrieved ids for one query, best first, without duplicates.
        qrels: Judged gains for that query, ``{doc_id: gain}``.
        k: Rank cutoff, at least 1.

    Returns:
        ``1 / rank`` of the first relevant id at rank ``<= k``, else 0.0.

    Raises:
        ValueError: If ``k`` is below 1 or ``ranked_ids`` has duplicates.
    """
    _check_k(k)
    _check_unique(ranked_ids)
    rank = first_hit_rank(ranked_ids[:k], lambda doc_id: qrels.get(doc_id, 0) > 0)
    return 0.0 if rank is None else 1.0 / rank
