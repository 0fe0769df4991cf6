"""Optional second-stage reranking with a cross-encoder that reads question and passage together.

Off by default: nothing here runs unless a caller builds :class:`RerankSettings`. The cross-encoder
(Nogueira & Cho, 2019, "Passage Re-ranking with BERT") scores each (question, passage) pair
jointly, which is slower than comparing embeddings, so only a shortlist of the fused candidates is
scored; the rest keep their order behind it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RerankSettings:
    """Which cross-encoder to load and how much of the candidate list it reads.

    Attributes:
        model_path: A local folder holding a cross-encoder (config, weights, tokenizer); nothing
            is downloaded.
        shortlist: How many leading candidates are scored; the rest follow unscored.
        max_length: Word-pieces per (question, passage) pair, special tokens included; longer
            pairs are truncated.

    Raises:
        ValueError: If ``shortlist`` or ``max_length`` is below 1.
    """

    model_path: Path
    shortlist: int = 25
    max_length: int = 512

    def __post_init__(self) -> None:
        if self.shortlist < 1:
            raise ValueError(f"shortlist must be >= 1, got {self.shortlist}")
        if self.max_length < 1:
            raise ValueError(f"max_length must be >= 1, got {self.max_length}")


class Reranker:
    """A sentence-transformers ``CrossEncoder`` loaded from a local folder onto the CPU."""

    def __init__(self, settings: RerankSettings) -> None:
        """Load the cross-encoder named by ``settings.model_path``.

        Args:
            settings: The model folder, shortlist size and pair length.

        Raises:
            FileNotFoundError: If ``settings.model_path`` is not an existing folder.
        """
        if not settings.model_path.is_dir():
            raise FileNotFoundError(
                f"cross-encoder folder {settings.model_path} does not exist: point "
                "RerankSettings.model_path at a local model folder (nothing is downloaded)")
        from sentence_transformers import CrossEncoder

        from rag_pipeline.core.embedding.torch_threads import apply_torch_threads

        apply_torch_threads()
        self.settings = settings
        self._model = CrossEncoder(str(settings.model_path), device="cpu", local_files_only=True,
                                   max_length=settings.max_length)

    def rerank(self, question: str, candidates: Sequence[tuple[str, str]]) -> list[tuple[str, float]]:
        """Order candidates by the cross-encoder's score for (question, text), highest first.

        Only the first ``settings.shortlist`` candidates are scored. The sort is stable, so equal
        scores keep their given order; unscored candidates follow in their given order with score
        ``-inf``.

        Args:
            question: The user's question.
            candidates: ``(id, text)`` pairs, best first by the previous stage.

        Returns:
            ``(id, score)`` pairs, every candidate once, scores descending.

        Raises:
            ValueError: If two candidates share an id, or the model scores a pair as NaN or infinite.
        """
        counts = Counter(candidate_id for candidate_id, _ in candidates)
        duplicates = sorted(candidate_id for candidate_id, count in counts.items() if count > 1)
        if duplicates:
            raise ValueError(f"candidate ids must be distinct; repeated: {duplicates}")
        head = candidates[: self.settings.shortlist]
        if not head:
            return []
        scores = self._model.predict([(question, text) for _, text in head], show_progress_bar=False)
        scored = [(candidate_id, float(score)) for (candidate_id, _), score in zip(head, scores, strict=True)]
        bad = [(candidate_id, score) for candidate_id, score in scored if not math.isfinite(score)]
        if bad:
            raise ValueError(f"the cross-encoder gave non-finite scores: {bad}")
        ranked = sorted(scored, key=lambda pair: pair[1], reverse=True)
        tail = [(candidate_id, -math.inf) for candidate_id, _ in candidates[self.settings.shortlist:]]
        return ranked + tail
