"""A small deterministic embedder for tests where the real model is not the point.

It has the interface of :class:`rag_pipeline.core.embedding.embedder.Embedder` (``spec``, ``embed``,
``embed_query``) and loads in microseconds: a text is a hashed bag of its lower-cased words and
their character trigrams (signed feature hashing, blake2b, so the same text gives the same vector
in every process), L2-normalised, 384 dimensions. Texts that share words are close; texts that
share none are nearly orthogonal. Its spec borrows the real model's folder only for the
word-piece tokenizer that chunking counts with; its name and fingerprint are its own, so its
vectors can never be mistaken for the real model's.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from rag_pipeline.core.config.keys import default_model_spec
from rag_pipeline.core.embedding.models import ModelSpec, l2_normalise

DIMENSION = 384
_WORD = re.compile(r"\w+")


def hashed_spec() -> ModelSpec:
    """The fake's declaration: the real tokenizer folder, its own name and fingerprint."""
    return replace(default_model_spec(), name="hashed-wordpieces", fingerprint="0000feed",
                   dimension=DIMENSION)


def _features(text: str) -> list[str]:
    words = _WORD.findall(text.lower())
    grams = [f"#{w}#"[i:i + 3] for w in words for i in range(len(w))]
    return ["[CLS]", *words, *grams]


def _slot(feature: str) -> tuple[int, float]:
    digest = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "big")
    return digest % DIMENSION, 1.0 if (digest >> 32) & 1 else -1.0


class HashedEmbedder:
    """Hashed bag of words and trigrams; same ``spec`` / ``embed`` / ``embed_query`` as the real one."""

    def __init__(self, spec: ModelSpec | None = None) -> None:
        self.spec = spec or hashed_spec()

    def embed(self, texts: Sequence[str], *, batch_size: int = 32,
              progress: Callable[[int, int], None] | None = None,
              wordpieces: Sequence[int] | None = None) -> np.ndarray:
        out = np.zeros((len(texts), self.spec.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature in _features(text):
                slot, sign = _slot(feature)
                out[row, slot % self.spec.dimension] += sign
            if progress is not None and ((row + 1) % batch_size == 0 or row + 1 == len(texts)):
                progress(row + 1, len(texts))
        return l2_normalise(out) if len(texts) else out

    def embed_query(self, question: str) -> np.ndarray:
        return self.embed([question])[0]
