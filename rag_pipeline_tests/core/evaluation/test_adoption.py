"""The held-out half and the adoption rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_pipeline.core.config.gold_file import GoldCorpus, GoldLine, GoldSet, load_gold_set
from rag_pipeline.core.evaluation.adoption import (
    AdoptionDecision,
    GeneralRetrieval,
    StyleComparison,
    adoption,
    compare_by_style,
    general_retrieval,
    held_out_lines,
    needle_documents,
    write_gold,
)
from rag_pipeline.core.evaluation.beir import BeirReport, BeirRow
from rag_pipeline.core.evaluation.evaluate import EvalReport, RankRow
from rag_pipeline.core.evaluation.metrics import wilson_interval

CANONICAL = {"a.md": "The loop   variable is\nassigned.", "b.md": "Targets are bound.",
             "c.md": "Targets are bound. Again here."}
LINES = (GoldLine("g1", "loop variable is assigned", "q?", "t?"),
         GoldLine("g2", "Targets are bound.", "q?", "t?"),      # in b.md and c.md: left out
         GoldLine("g3", "Again here.", "q?", "t?"))


def test_a_needle_belongs_to_the_one_document_holding_it():
    assert needle_documents(LINES, CANONICAL) == {"g1": "a.md", "g3": "c.md"}


def test_held_out_lines_are_those_of_held_out_documents_and_written_back(tmp_path: Path):
    gold = GoldSet(tmp_path / "g.jsonl", GoldCorpus("c", ("a.md", "b.md", "c.md")), LINES)
    lines = held_out_lines(gold, CANONICAL, ["c.md", "b.md"])
    assert [line.id for line in lines] == ["g3"]
    path = write_gold(tmp_path / "held.jsonl", gold, lines, ["c.md", "b.md"])
    assert json.loads(path.read_text().splitlines()[0]) == {"corpus": "c",
                                                           "documents": ["b.md", "c.md"]}
    again = load_gold_set(path)
    assert again.lines == lines and again.corpus == GoldCorpus("c", ("b.md", "c.md"))


def _report(rows: list[tuple[str, str, int | None]]) -> EvalReport:
    ranks = [RankRow("header", "hybrid", f"{q}:{style}", q, style, rank) for q, style, rank in rows]
    return EvalReport(len(ranks), 0, [], {}, ranks, [], [], [], None, "")


def test_compare_by_style_counts_recall_intervals_and_paired_tests():
    adapted = _report([("l1", "ticket", 1), ("l2", "ticket", 10), ("l3", "ticket", None),
                       ("l1", "question", 1)])
    base = _report([("l1", "ticket", 9), ("l2", "ticket", 30), ("l3", "ticket", 2),
                    ("l1", "question", 1)])
    rows = compare_by_style(adapted, base, ks=(4, 20))
    # ticket, k = 4: a finds l1; b finds l3 -> 1 win, 1 loss, p = 1.
    # ticket, k = 20: a finds l1, l2; b finds l1, l3 -> 1 win (l2), 1 loss (l3).
    assert rows == [
        StyleComparison("header", "hybrid", "question", 4, 1, 1, 1, wilson_interval(1, 1),
                        wilson_interval(1, 1), 0, 0, 1.0),
        StyleComparison("header", "hybrid", "question", 20, 1, 1, 1, wilson_interval(1, 1),
                        wilson_interval(1, 1), 0, 0, 1.0),
        StyleComparison("header", "hybrid", "ticket", 4, 3, 1, 1, wilson_interval(1, 3),
                        wilson_interval(1, 3), 1, 1, 1.0),
        StyleComparison("header", "hybrid", "ticket", 20, 3, 2, 2, wilson_interval(2, 3),
                        wilson_interval(2, 3), 1, 1, 1.0),
    ]
    assert rows[3].recall_a == 2 / 3


def _row(style: str, k: int, wins: int, losses: int, p: float) -> StyleComparison:
    return StyleComparison("header", "hybrid", style, k, 40, 20, 20, (0.0, 1.0), (0.0, 1.0),
                           wins, losses, p)


SCIFACT = GeneralRetrieval("scifact", {"dense": (0.640, 0.645), "hybrid": (0.716, 0.714)})


def test_adopted_only_when_both_ticket_cutoffs_improve_significantly_and_nothing_is_worse():
    good = [_row("ticket", 4, 8, 0, 0.0078), _row("ticket", 20, 7, 0, 0.0156),
            _row("question", 4, 1, 2, 1.0), _row("question", 20, 0, 0, 1.0)]
    assert adoption(good, "header", "hybrid", SCIFACT) == AdoptionDecision(
        True, "ticket-style R@4 (8/0, p = 0.0078) and R@20 (7/0, p = 0.0156) improve; nothing "
              "significantly worse; scifact nDCG@10 within 0.01")
    # Planted flaw: R@20 not significant -> must be refused.
    weak = [*good[:1], _row("ticket", 20, 4, 1, 0.375), *good[2:]]
    assert adoption(weak, "header", "hybrid", SCIFACT) == AdoptionDecision(
        False, "no significant ticket-style gain: R@20 4 wins / 1 losses, p = 0.3750")
    # Planted flaw: question-style R@4 significantly worse -> refused despite the ticket gains.
    worse = [*good[:2], _row("question", 4, 0, 7, 0.0156), good[3]]
    decision = adoption(worse, "header", "hybrid", SCIFACT)
    assert not decision.adopt
    assert decision.reason == "significantly worse: question R@4 (0 wins / 7 losses, p = 0.0156)"
    # Significant, but in the wrong direction on ticket style: not a gain.
    assert not adoption([_row("ticket", 4, 0, 8, 0.0078), good[1]], "header", "hybrid",
                        SCIFACT).adopt
    with pytest.raises(ValueError, match="no ticket-style R@20 for header x hybrid"):
        adoption(good[:1], "header", "hybrid", SCIFACT)


def test_general_retrieval_must_be_measured_and_within_a_hundredth():
    good = [_row("ticket", 4, 8, 0, 0.0078), _row("ticket", 20, 7, 0, 0.0156)]
    # Planted flaw: the gold-set gains alone must not adopt.
    assert adoption(good, "header", "hybrid", None) == AdoptionDecision(
        False, "general retrieval not measured (the public benchmark's nDCG@10 for both models)")
    # 0.01 below is allowed (0.635 = 0.645 - 0.01); 0.0101 below is not.
    edge = GeneralRetrieval("scifact", {"dense": (0.635, 0.645)})
    assert adoption(good, "header", "hybrid", edge).adopt
    broken = GeneralRetrieval("scifact", {"dense": (0.6349, 0.645), "hybrid": (0.72, 0.71)})
    assert adoption(good, "header", "hybrid", broken) == AdoptionDecision(
        False, "scifact nDCG@10 more than 0.01 below the base: dense 0.63490 vs 0.64500")
    with pytest.raises(ValueError, match="no nDCG@10 row for scifact"):
        adoption(good, "header", "hybrid", GeneralRetrieval("scifact", {}))


def test_general_retrieval_pairs_the_rows_that_embed_and_refuses_other_runs():
    def report(dense: float, hybrid: float, name: str = "scifact") -> BeirReport:
        return BeirReport(name, 300, 5183, [
            BeirRow("dense", None, None, dense, 0.9, 0.6),
            BeirRow("bm25", "english", 1.2, 0.679, 0.9, 0.6),
            BeirRow("hybrid", "english", 1.2, hybrid, 0.9, 0.6)])

    assert general_retrieval(report(0.64, 0.71), report(0.645, 0.714)) == GeneralRetrieval(
        "scifact", {"dense": (0.64, 0.645), "hybrid[english k1=1.2]": (0.71, 0.714)})
    with pytest.raises(ValueError, match="the two BEIR runs differ: nfcorpus"):
        general_retrieval(report(0.64, 0.71, "nfcorpus"), report(0.645, 0.714))
