"""Where a chunk's content splits into sentences, for the multi-vector scorer and the quoted
answer alike (no numpy: printing an answer imports this)."""

from __future__ import annotations

import re

SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]\u2019\u201d]*\s+|\n\s*\n")
"""Where a chunk's content is split into sentences: a sentence end (with its closing quotes and
brackets) and the white space after it, or a blank line. The multi-vector scorer
(:mod:`rag_pipeline.core.retrieval.sentences`) and the quoted answer
(:func:`rag_pipeline.core.answer.quoted.sentence_spans`) both split this way."""
MIN_SENTENCE_CHARS = 20
"""Shorter pieces (a lone ``x = 1``, a list bullet, a heading) join the next sentence."""
