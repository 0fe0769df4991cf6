"""How an adapted model is trained and named: the recipe, what its spec carries, the key's
fingerprint, and the held-out half of a gold set's documents."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.embedding.models import FINGERPRINT_CHARS, ModelSpec


@dataclass(frozen=True)
class AdaptRecipe:
    """How an adapted model is trained (the ``adapt = {...}`` table of a ``[[models]]`` entry).

    Attributes:
        base: The declared model (by name) that is fine-tuned.
        chunker: The chunker whose chunks the pairs are made from.
        epochs: Passes over the pairs.
        batch_size: Pairs per step; the other pairs of a batch are each anchor's negatives.
        seed: Seeds the pair sample, the batch order, dropout and the held-out split.
        max_seq_length: Word-pieces per text while training.
        max_pairs: At most this many pairs, a seeded sample when the corpus makes more.
        learning_rate: AdamW's learning rate (constant).
        held_out: Documents no pair may come from (the held-out half of a gold set, see
            :func:`held_out_half`), sorted.
    """

    base: str
    chunker: ChunkingStrategy = ChunkingStrategy.HEADER
    epochs: int = 1
    batch_size: int = 32
    seed: int = 0
    max_seq_length: int = 128
    max_pairs: int = 4000
    learning_rate: float = 2e-5
    held_out: tuple[str, ...] = ()

    def text(self) -> str:
        """The canonical JSON of the recipe (part of the key)."""
        values = asdict(self)
        values["chunker"] = self.chunker.value
        values["held_out"] = list(self.held_out)
        return json.dumps(values, sort_keys=True)


@dataclass(frozen=True)
class Adaptation:
    """What an adapted model's spec carries: the recipe, the base model's spec, and the pairs'
    digest and count as computed when the key was minted."""

    recipe: AdaptRecipe
    base: ModelSpec
    pairs_sha256: str
    pairs: int
    available: int = field(default=0)
    """Pairs the corpus made before the ``max_pairs`` sample."""
    record: Path | None = field(default=None, compare=False)
    """The model cache's record of the digest (:func:`pairs_digest`), dropped when training
    finds the corpus makes other pairs."""


def held_out_half(documents: Iterable[str], seed: int) -> tuple[str, ...]:
    """The held-out half of a gold set's documents: sorted by ``sha256("<seed>:<id>")``, the
    first ``ceil(n / 2)``, returned sorted by id. A seeded, order-free split by topic."""
    ranked = sorted(set(documents), key=lambda d: hashlib.sha256(f"{seed}:{d}".encode()).hexdigest())
    return tuple(sorted(ranked[:(len(ranked) + 1) // 2]))


def adapted_fingerprint(base_key: str, recipe: AdaptRecipe, digest: str, window: int) -> str:
    """First 8 hex digits of the sha256 of the base key, the recipe, the pairs' digest and the
    embedding window: a different corpus (or recipe, or base) is a different key."""
    text = json.dumps({"base": base_key, "recipe": recipe.text(), "pairs_sha256": digest,
                       "window": window}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:FINGERPRINT_CHARS]
