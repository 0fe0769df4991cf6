"""The run catalogue of the retrieval evaluation: which ways of retrieving are measured, and
which pairs of them are compared.

A run (:class:`RunKey`) is a chunker x retriever x BM25 analyzer x duplicate collapse, or a
named candidate setting (:data:`CANDIDATES`, ``rag-pipeline eval --candidates``), always on the
exact dense path. :func:`default_runs` and :func:`default_pairs` are what ``eval`` measures by
default; :func:`candidate_runs` and :func:`candidate_pairs` measure every candidate against
``before``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.index.ann import DensePath
from rag_pipeline.core.retrieval.fusion import Fusion
from rag_pipeline.core.retrieval.retriever import (
    DEFAULT_ANALYZER,
    DenseUnit,
    RetrievalSettings,
    Retriever,
)
from rag_pipeline.core.text.analyzers import Analyzer

PRODUCTION_CHUNKER = "header"
_H = Retriever.HYBRID
BEFORE = RetrievalSettings(_H, Analyzer.ENGLISH, fusion=Fusion.RRF, dense_weight=1.0)
"""The default before issue 11: English BM25 and plain RRF (k = 60) of dense and BM25."""
CANDIDATES: dict[str, RetrievalSettings] = {
    "before": BEFORE,
    "code": replace(BEFORE, analyzer=Analyzer.CODE),
    "rrf-dense2": replace(BEFORE, dense_weight=2.0),
    "rrf-dense3": replace(BEFORE, dense_weight=3.0),
    "minmax": replace(BEFORE, fusion=Fusion.MIN_MAX),
    "minmax-dense2": replace(BEFORE, fusion=Fusion.MIN_MAX, dense_weight=2.0),
    "rm3": replace(BEFORE, rm3_docs=10),
    "rocchio": replace(BEFORE, rocchio_docs=5),
    "rm3+rocchio": replace(BEFORE, rm3_docs=10, rocchio_docs=5),
    "sentence": replace(BEFORE, dense_unit=DenseUnit.SENTENCE),
    "chunk|sentence": replace(BEFORE, dense_unit=DenseUnit.CHUNK_OR_SENTENCE),
    "code+rrf-dense2": replace(BEFORE, analyzer=Analyzer.CODE, dense_weight=2.0),
    "code+minmax-dense2": replace(BEFORE, analyzer=Analyzer.CODE, fusion=Fusion.MIN_MAX,
                                  dense_weight=2.0),
    "code+minmax-dense2+chunk|sentence": replace(
        BEFORE, analyzer=Analyzer.CODE, fusion=Fusion.MIN_MAX, dense_weight=2.0,
        dense_unit=DenseUnit.CHUNK_OR_SENTENCE),
}
"""Switchable retrieval settings (``rag-pipeline eval --candidates``), each measured against
``before`` (the default before issue 11) by paired sign tests per query style. Each differs
from ``before`` in one idea, except the ``+`` combinations of ideas that won on their own."""


@dataclass(frozen=True)
class RunKey:
    """One way of retrieving: chunker, retriever, BM25 analyzer, duplicate collapse."""

    chunker: str
    retriever: Retriever
    analyzer: Analyzer = DEFAULT_ANALYZER
    collapse: bool = True
    candidate: str | None = None
    """A name in ``CANDIDATES``: that candidate's settings replace the fields above."""

    @property
    def retriever_label(self) -> str:
        if self.candidate is not None:
            return f"{self.retriever.value}[{self.candidate}]"
        label = self.retriever.value
        if self.retriever is not Retriever.DENSE and self.analyzer is not DEFAULT_ANALYZER:
            label += f"[{self.analyzer.value}]"
        if not self.collapse:
            label += "[no-collapse]"
        return label

    @property
    def label(self) -> str:
        return f"{self.chunker}/{self.retriever_label}"

    def settings(self) -> RetrievalSettings:
        """The run's settings, always on the exact dense path."""
        if self.candidate is not None:
            return replace(CANDIDATES[self.candidate], dense_path=DensePath.EXACT)
        return RetrievalSettings(retriever=self.retriever, analyzer=self.analyzer,
                                 collapse_duplicates=self.collapse, dense_path=DensePath.EXACT)


def beir_candidates() -> dict[str, RetrievalSettings]:
    """The default setting and every candidate a BEIR corpus can run (one document per unit,
    so no sentence vectors)."""
    return {"default": RetrievalSettings(),
            **{name: s for name, s in CANDIDATES.items() if s.dense_unit is DenseUnit.CHUNK}}


def candidate_run(chunker: str, name: str) -> RunKey:
    """The run of candidate ``name`` (a key of ``CANDIDATES``) on ``chunker``."""
    settings = CANDIDATES[name]
    return RunKey(chunker, settings.retriever, settings.analyzer, settings.collapse_duplicates,
                  candidate=name)


def candidate_runs(chunker: str = PRODUCTION_CHUNKER) -> list[RunKey]:
    return [candidate_run(chunker, name) for name in CANDIDATES]


def candidate_pairs(runs: Sequence[RunKey]) -> list[tuple[RunKey, RunKey]]:
    """The default hybrid run, then every other candidate, against ``before`` on its chunker."""
    present = set(runs)
    pairs = []
    for run in runs:
        before = candidate_run(run.chunker, "before")
        if before not in present or run == before:
            continue
        if run.candidate is not None or run == RunKey(run.chunker, Retriever.HYBRID):
            pairs.append((run, before))
    return pairs


def _other_analyzer() -> Analyzer:
    return next(a for a in Analyzer if a is not DEFAULT_ANALYZER)


def default_runs(chunkers: Sequence[str]) -> list[RunKey]:
    """Three retrievers for every chunker, plus, on the production chunker, the other BM25
    analyzer (alone and fused) and hybrid with duplicate collapse off."""
    runs = [RunKey(c, r) for c in chunkers for r in Retriever]
    if PRODUCTION_CHUNKER in chunkers:
        other = _other_analyzer()
        runs += [RunKey(PRODUCTION_CHUNKER, Retriever.BM25, other),
                 RunKey(PRODUCTION_CHUNKER, Retriever.HYBRID, other),
                 RunKey(PRODUCTION_CHUNKER, Retriever.HYBRID, collapse=False)]
    return runs


def default_pairs(runs: Sequence[RunKey]) -> list[tuple[RunKey, RunKey]]:
    """The comparisons that matter, where both sides were run."""
    h = Retriever.HYBRID
    other = _other_analyzer()
    header, blind = ChunkingStrategy.HEADER.value, ChunkingStrategy.BLIND.value
    wanted = [
        (RunKey(header, h), RunKey(blind, h)),
        (RunKey(header, h), RunKey(ChunkingStrategy.BOUNDARIES.value, h)),
        (RunKey(ChunkingStrategy.BLIND_OVERLAP.value, h), RunKey(blind, h)),
        (RunKey(ChunkingStrategy.HEADER_OVERLAP.value, h), RunKey(header, h)),
        (RunKey(header, h), RunKey(header, Retriever.DENSE)),
        (RunKey(header, h), RunKey(header, Retriever.BM25)),
        (RunKey(header, h), RunKey(header, h, collapse=False)),
        (RunKey(header, Retriever.BM25, other), RunKey(header, Retriever.BM25)),
        (RunKey(header, h, other), RunKey(header, h)),
    ]
    present = set(runs)
    return [(a, b) for a, b in wanted if a in present and b in present]
