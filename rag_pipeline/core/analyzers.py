"""Text analyzers for BM25: how a text becomes the terms that are counted.

The analyzer is part of the BM25 statistics' identity: statistics built with one analyzer must
be queried with the same one, so every BM25 table carries the analyzer's name.
"""

from __future__ import annotations

import re
from enum import StrEnum
from functools import cache

PLAIN_PATTERN = re.compile(r"[a-z0-9]+")
WORD_PATTERN = re.compile(r"(?u)\b\w\w+\b")

ENGLISH_STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
))
"""The 33 English stop words of Lucene's ``EnglishAnalyzer`` (also bm25s's ``en`` list)."""


class Analyzer(StrEnum):
    """``plain``: lower case, runs of ``[a-z0-9]``, nothing removed. ``english``: lower case,
    words of two or more word characters, Lucene's 33 stop words dropped, Snowball English stems
    (PyStemmer), as bm25s does with ``stopwords="en"`` and an English stemmer."""

    PLAIN = "plain"
    ENGLISH = "english"

    @property
    def description(self) -> str:
        if self is Analyzer.PLAIN:
            return "lowercase; tokens [a-z0-9]+; no stop words; no stemming"
        return ("lowercase; tokens (?u)\\b\\w\\w+\\b; Lucene English stop words (33); "
                "Snowball English stemmer (PyStemmer)")


@cache
def _english_stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def analyze(text: str, analyzer: Analyzer) -> list[str]:
    """The terms of ``text`` in order, repeats kept."""
    lowered = text.lower()
    if analyzer is Analyzer.PLAIN:
        return PLAIN_PATTERN.findall(lowered)
    words = [w for w in WORD_PATTERN.findall(lowered) if w not in ENGLISH_STOPWORDS]
    return _english_stemmer().stemWords(words)
