"""The refusal gate: the only part of the pipeline that can say no.

Keep at most ``max_sources`` candidates: first those holding a code the question names
verbatim (:mod:`rag_pipeline.core.retrieval.identifiers`: ``INV-0045-QZ``, whose passage an
embedding places far from a question of a few words), then, in retrieval order, those whose
cosine distance is strictly under ``cut``: those holding an option the question names
(``--depth``) first. An option is kept first only under the cut: every tool has a ``--delete``,
and one in the corpus is no answer about another's. A question naming a record number none of the
candidates holds keeps none: it asks about something the corpus does not hold, however close
the look-alikes (``INV-2026-0051`` for ``INV-2026-9999``); another code none holds beside its
look-alikes (``gw-eu-09`` beside ``gw-eu-07``) is named beside the answer. When none is kept,
the answer is a refusal and no model is called.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rag_pipeline.core.retrieval.identifiers import is_option, is_record_number

if TYPE_CHECKING:
    from rag_pipeline.core.embedding.models import ModelSpec
    from rag_pipeline.core.retrieval.retriever import Hit

DEFAULT_CUT = 0.6
"""Chosen by the refusal sweep on the bundled gold set (122 needles x 2 phrasings, 60
out-of-domain questions; ``eval_sweep``): the cut with the most right outcomes, in-domain
answered with a correct chunk plus out-of-domain refused. Its honest figures are the 2-fold
cross-validated ones (``eval_gate_cv``): cut 0.6 chosen on each half, held out 4 of 244
in-domain questions refused and 12 of 60 out-of-domain questions answered; the refusal-budget
rule (at most 2 of 64 refused) lands at 0.586 / 0.596 with the same held-out counts. No other
refusal signal measured did better (README, "Evaluation"). Re-run the sweep for another corpus."""
MAX_SOURCES = 4

__all__ = ["DEFAULT_CUT", "MAX_SOURCES", "GateDecision", "apply_gate", "gate_cut", "gate_hits",
           "refusal_line"]


@dataclass(frozen=True)
class GateDecision:
    kept: tuple[int, ...]
    """Positions (in the candidate list) of the kept candidates: those holding a code the
    question names first, then those under the cut holding an option it names, then the
    others in retrieval order."""
    cut: float
    closest_distance: float | None
    unheld: tuple[str, ...] = ()
    """The codes the question names that no candidate holds beside their look-alikes: the
    reason it was refused (a record number among them), or what the answer lacks."""

    @property
    def answered(self) -> bool:
        return bool(self.kept)


def gate_cut(spec: ModelSpec, cut: float | None = None) -> float:
    """The cut questions to ``spec``'s model are gated at: ``cut`` when one is given (``--cut``,
    ``serve --cut``), else the model's declared ``cut`` (``rag_pipeline.toml``), else
    :data:`DEFAULT_CUT`. The one place the cut is resolved: ``ask``, ``serve`` and the service
    all ask here."""
    if cut is not None:
        return cut
    return spec.cut if spec.cut is not None else DEFAULT_CUT


def apply_gate(distances: Sequence[float], cut: float = DEFAULT_CUT,
               max_sources: int = MAX_SOURCES, identifiers: Sequence[str] = (),
               unheld: Sequence[str] = (), names_held: bool = False) -> GateDecision:
    """Keeps the candidates holding a code the question names (``identifiers``: one per
    candidate, ``""`` for none), then those under the cut in retrieval order (holding an option
    it names first), up to the cap; none when the question names a record number no candidate
    holds (among ``unheld``: the codes it names that none holds beside their look-alikes) and no
    candidate holds another code it names (``names_held``: one does, even a code too common to
    mark it)."""
    if max_sources < 1:
        raise ValueError(f"max_sources must be at least 1, got {max_sources}")
    closest = min(distances) if len(distances) else None
    named = [i for i, term in enumerate(identifiers) if term and not is_option(term)]
    if any(map(is_record_number, unheld)) and not named and not names_held:
        return GateDecision((), cut, closest, tuple(unheld))
    under = [i for i, d in enumerate(distances) if d < cut and i not in named]
    optioned = [i for i in under if is_option(identifiers[i])] if identifiers else []
    kept = (named + optioned + [i for i in under if i not in optioned])[:max_sources]
    return GateDecision(tuple(kept), cut, closest, tuple(unheld) if kept else ())


def gate_hits(hits: Sequence[Hit], cut: float = DEFAULT_CUT,
              max_sources: int = MAX_SOURCES) -> GateDecision:
    """:func:`apply_gate` on a ranking's hits: their distances, the codes they hold and the
    codes the question names that none holds (``ask`` and the evaluation gate the same way)."""
    return apply_gate([h.cosine_distance for h in hits], cut, max_sources,
                      [h.identifier for h in hits], hits[0].unheld if hits else (),
                      bool(hits) and hits[0].names_held)


def refusal_line(question: str, decision: GateDecision) -> str:
    if decision.unheld:
        named = ", ".join(f'"{identifier}"' for identifier in decision.unheld)
        return f'NO ANSWER: no passage found holds {named}, which "{question}" names'
    if decision.closest_distance is None:
        return (f'NO ANSWER: no passage was retrieved for "{question}", so nothing was '
                "measured against the cut (BM25 finds only passages holding a term of it)")
    return (f'NO ANSWER: nothing under cosine distance {decision.cut} for "{question}" '
            f"(closest: {decision.closest_distance:.3f})")
