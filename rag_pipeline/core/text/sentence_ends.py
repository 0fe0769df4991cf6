"""Where a chunk's content splits into sentences, for the multi-vector scorer and the quoted
answer alike (no numpy: printing an answer imports this)."""

from __future__ import annotations

import re
import unicodedata

NOT_LAST_WORDS = ("cf", "e.g", "i.e", "vs", "viz", "al", "fig", "figs", "eq", "eqs", "dr", "mr",
                  "mrs", "ms", "prof", "pp", "approx")
"""Abbreviations whose stop never ends a sentence (any case): ``cf. Smith``, ``et al. show``,
``Fig. 3``."""
_CLOSERS = "[\"')\\]\u2019\u201d]*+"
_NOT_AFTER = "".join(rf"(?<!(?i:\b{re.escape(word)})\.)" for word in NOT_LAST_WORDS)
_CJK_CLOSERS = "[\u300d\u300f\uff09\u3011\u201d]*+"
SENTENCE_END = re.compile(rf"(?<=[!?]){_CLOSERS}\s++|(?<=\.){_NOT_AFTER}{_CLOSERS}\s++(?![a-z\u00bb])"
                          rf"|(?<=[\u3002\uff01\uff1f]){_CJK_CLOSERS}\s*+|\n\s*\n")
"""Where a chunk's content is split into sentences: a sentence end (with its closing quotes and
brackets) and the white space after it, Chinese and Japanese ones (``。！？``, no space
after them), or a blank line. A stop is no end after one of :data:`NOT_LAST_WORDS`, or before
a small letter (``9 a.m. and``, ``e.g. the``) or a French closing guillemet (``« . »``). The
multi-vector scorer (:mod:`rag_pipeline.core.retrieval.sentences`) and the quoted answer
(:func:`rag_pipeline.core.answer.quoted.sentence_spans`) both split this way."""
MIN_SENTENCE_CHARS = 20
"""Shorter pieces (a lone ``x = 1``, a list bullet, a heading) join the next sentence (as
:func:`sentence_length` measures them)."""


def sentence_length(piece: str) -> int:
    """How long ``piece`` is, measured against :data:`MIN_SENTENCE_CHARS`: its characters, a
    wide one (Chinese, Japanese, Korean) counted twice, as it says about as much as a word
    (``日本語の説明書です。`` is a sentence)."""
    if piece.isascii():
        return len(piece)
    return len(piece) + sum(unicodedata.east_asian_width(c) in "WF" for c in piece)
