"""Text analyzers for BM25: how a text becomes the terms that are counted.

The analyzer is part of the BM25 statistics' identity: statistics built with one analyzer must
be queried with the same one, so every BM25 table carries the analyzer's name. Every analyzer
reads a text in Unicode's composed form (NFC), without soft hyphens and zero-width characters:
``Zu\u0308rich`` (as macOS and many PDFs write it), ``pass\u200bword`` and ``data\u00adbase``
are the words a reader types.
"""

from __future__ import annotations

import re
import unicodedata
from enum import StrEnum
from functools import cache

PLAIN_PATTERN = re.compile(r"[a-z0-9]+")
WORD_PATTERN = re.compile(r"(?u)\b\w+\b")
"""A word; one of two characters or more is a term, and a run of CJK characters in it is cut
into bigrams (:func:`words`)."""
_CJK = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f"
_CJK_RUN = re.compile(f"[{_CJK}]+")
"""Han, hiragana, katakana (half-width too) and hangul syllables: scripts written without a
space between words (Chinese, Japanese), or with particles joined to them (Korean)."""

ENGLISH_STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
))
"""The 33 English stop words of Lucene's ``EnglishAnalyzer`` (also bm25s's ``en`` list)."""


class Analyzer(StrEnum):
    """``plain``: lower case, runs of ``[a-z0-9]``, nothing removed. ``english``: lower case,
    words of two or more word characters, Lucene's 33 stop words dropped, Snowball English stems
    (PyStemmer), as bm25s does with ``stopwords="en"`` and an English stemmer; a run of CJK
    characters is cut into overlapping bigrams (a lone one is a term), as Lucene's CJK analyzer
    cuts it: "备份文件保留" is 备份 份文 文件 件保 保留, so a question written without spaces
    meets the passage's terms. ``code`` (the
    default): the ``english`` terms, then each white-space-separated token holding a character
    that is neither a letter, a digit nor white space (``INV-2026-0042``, ``os.path.join``),
    prose punctuation stripped from its ends, kept whole and lowercased."""

    PLAIN = "plain"
    ENGLISH = "english"
    CODE = "code"

    @property
    def description(self) -> str:
        if self is Analyzer.PLAIN:
            return "lowercase; tokens [a-z0-9]+; no stop words; no stemming"
        if self is Analyzer.CODE:
            return ("the english analyzer's terms, then every white-space-separated code token "
                    "(one holding a character that is neither a letter, a digit nor white "
                    "space, prose punctuation stripped from its ends) kept whole, lowercased")
        return ("lowercase; tokens (?u)\\b\\w\\w+\\b, CJK runs as bigrams; Lucene English "
                "stop words (33); Snowball English stemmer (PyStemmer)")


@cache
def _english_stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def code_tokens(text: str) -> list[str]:
    """White-space-separated pieces that look like code, in order: after stripping prose
    punctuation (quotes, commas, colons, a final full stop, unbalanced brackets) from the ends,
    a piece is kept whole, lowercased, when it holds a character that is not a letter, digit
    or white space and is not only an underscore-joined word (``__iadd__`` is a word already).

    ``"[0] * -5 gives []."`` -> ``["[0]", "*", "-5", "[]"]``.
    """
    tokens = []
    for piece in text.split():
        piece = piece.strip(_PROSE_ENDS).rstrip("?!").removesuffix(".").removesuffix(",")
        while piece and piece[0] in _OPENERS and _OPENERS[piece[0]] not in piece[1:]:
            piece = piece[1:]
        while piece and piece[-1] in _CLOSERS and _CLOSERS[piece[-1]] not in piece[:-1]:
            piece = piece[:-1]
        piece = piece.strip(_PROSE_ENDS).rstrip("?!")
        if piece and _CODE_CHAR.search(piece):
            tokens.append(piece.lower())
    return tokens


_PROSE_ENDS = "\"'`,;:\u2018\u2019\u201c\u201d"
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {")": "(", "]": "[", "}": "{"}
_CODE_CHAR = re.compile(r"[^\w\s]")


_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))
"""The soft hyphen, the zero-width space, non-joiner and joiner, the word joiner and the
zero-width no-break space: inside a word, they part it for no reader."""


def analyze(text: str, analyzer: Analyzer) -> list[str]:
    """The terms of ``text`` in order, repeats kept (for ``code``: the english terms, then the
    code tokens), read in composed form without invisible characters (the module docstring)."""
    if not text.isascii():
        text = unicodedata.normalize("NFC", text).translate(_INVISIBLE)
    lowered = text.lower()
    if analyzer is Analyzer.PLAIN:
        return PLAIN_PATTERN.findall(lowered)
    stems = _english_stemmer().stemWords(
        [w for w in words(lowered) if w not in ENGLISH_STOPWORDS])
    if analyzer is Analyzer.CODE:
        return stems + code_tokens(text)
    return stems


def words(text: str) -> list[str]:
    """The words of ``text`` (two word characters or more), each run of CJK characters in one
    cut into overlapping bigrams (a lone CJK character a term of its own), in order."""
    found = []
    for word in WORD_PATTERN.findall(text):
        if word.isascii() or not _CJK_RUN.search(word):
            if len(word) > 1:
                found.append(word)
            continue
        at = 0
        for run in _CJK_RUN.finditer(word):
            if run.start() - at > 1:
                found.append(word[at:run.start()])
            piece = run.group()
            found += [piece] if len(piece) == 1 else [piece[i:i + 2] for i in range(len(piece) - 1)]
            at = run.end()
        if len(word) - at > 1:
            found.append(word[at:])
    return found
