"""Sentence vectors inside each chunk: the best sentence scores the chunk (multi-vector).

A symptom that matches one sentence of a long chunk is diluted by the chunk's other sentences
in the chunk's single mean-pooled vector; scoring a chunk by its closest sentence
(MaxSim over the chunk's sentences, as ColBERT does over tokens: Khattab & Zaharia, SIGIR 2020)
keeps that sentence's signal. Sentences are split at the chunker's sentence ends and at blank
lines; each is embedded with the chunk's context header in front.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag_pipeline.core.retrieval.dense import cosine_distances
from rag_pipeline.core.text.sentence_ends import MIN_SENTENCE_CHARS, SENTENCE_END, sentence_length

__all__ = ["SentenceIndex", "best_sentence_distances", "partition_sentences", "split_sentences"]


def split_sentences(content: str) -> list[str]:
    """The content's sentences, in order, white space collapsed; short pieces are joined to
    the next one (the last to the previous), so no sentence is under ``MIN_SENTENCE_CHARS``
    unless the whole content is."""
    pieces = [" ".join(p.split()) for p in SENTENCE_END.split(content)]
    pieces = [p for p in pieces if p]
    out: list[str] = []
    carry = ""
    for piece in pieces:
        piece = f"{carry} {piece}".strip() if carry else piece
        if sentence_length(piece) < MIN_SENTENCE_CHARS:
            carry = piece
            continue
        out.append(piece)
        carry = ""
    if carry:
        if out:
            out[-1] = f"{out[-1]} {carry}"
        else:
            out.append(carry)
    return out


@dataclass(frozen=True)
class SentenceIndex:
    """Unit vectors of every sentence of a partition, ``rows[i]`` the chunk row of vector i."""

    model_key: str
    rows: np.ndarray
    vectors: np.ndarray
    n_rows: int

    @classmethod
    def build(cls, model_key: str, headers: Sequence[str], contents: Sequence[str],
              embed: Callable[[list[str]], np.ndarray]) -> SentenceIndex:
        """Splits every content, embeds ``header + sentence`` with ``embed(list[str])``."""
        rows, texts = [], []
        for row, (header, content) in enumerate(zip(headers, contents, strict=True)):
            for sentence in split_sentences(content):
                rows.append(row)
                texts.append(f"{header}{sentence}")
        vectors = np.asarray(embed(texts), np.float32) if texts else np.zeros((0, 0), np.float32)
        return cls(model_key, np.array(rows, np.int64), vectors, len(contents))


def best_sentence_distances(index: SentenceIndex, query: np.ndarray) -> np.ndarray:
    """Per chunk row, the cosine distance of its closest sentence (2.0 for a row without one)."""
    best = np.full(index.n_rows, 2.0, np.float32)
    if len(index.rows):
        np.minimum.at(best, index.rows, cosine_distances(index.vectors, query))
    return best


def chunk_headers(texts: Sequence[str], contents: Sequence[str]) -> list[str]:
    """What each chunk's embedded text puts before its content (the context header, or the
    overlap), so a sentence is embedded in the same context as its chunk."""
    return [text[:len(text) - len(content)] if text.endswith(content) else ""
            for text, content in zip(texts, contents, strict=True)]


def partition_sentences(model_key: str, texts: Sequence[str], contents: Sequence[str],
                        embed: Callable[[list[str]], np.ndarray],
                        cache_dir: Path | None = None) -> SentenceIndex:
    """The sentence index of a partition, cached on disk under a name holding the model key
    and a digest of the chunk texts, so a cache is never read for another model or index."""
    digest = hashlib.sha256("\x00".join([*texts, "\x01", *contents]).encode("utf-8")).hexdigest()[:16]
    path = cache_dir / f"sentences-{model_key}-{digest}.npz" if cache_dir else None
    if path is not None and path.is_file():
        stored = np.load(path)
        return SentenceIndex(model_key, stored["rows"], stored["vectors"], len(contents))
    built = SentenceIndex.build(model_key, chunk_headers(texts, contents), contents, embed)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, rows=built.rows, vectors=built.vectors)
        tmp.replace(path)
    return built
