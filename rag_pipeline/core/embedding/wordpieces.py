"""Counts word-pieces the way the encoder sees them, to report what its window silently drops.

all-MiniLM-L6-v2 reads at most 256 word-pieces, ``[CLS]`` and ``[SEP]`` included, and ignores the
rest without a warning. Counting uses the model's own ``tokenizer.json`` (no truncation), so the
count is the encoder's count.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from rag_pipeline.core.embedding.models import ModelSpec


class WordpieceCounter:
    def __init__(self, spec: ModelSpec) -> None:
        from tokenizers import Tokenizer

        self.spec = spec
        self.tokenizer = Tokenizer.from_file(str(spec.path / "tokenizer.json"))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()

    def count(self, texts: Sequence[str]) -> list[int]:
        """Word-pieces of each text, special tokens included."""
        return [len(e.ids) for e in self.tokenizer.encode_batch(list(texts))]

    def count_plain(self, texts: Sequence[str]) -> list[int]:
        """Word-pieces of each text alone, without special tokens (for header shares)."""
        return [len(e.ids) for e in self.tokenizer.encode_batch(list(texts),
                                                                add_special_tokens=False)]

    def truncated(self, count: int) -> bool:
        return count > self.spec.max_tokens


@cache
def wordpiece_counter(spec: ModelSpec) -> WordpieceCounter:
    return WordpieceCounter(spec)
