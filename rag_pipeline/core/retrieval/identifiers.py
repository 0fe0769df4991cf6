"""Identifiers a question names, and the ranked chunks that hold them verbatim.

A question that names an invoice, a ticket, a host or a build (``INV-0045-QZ``, ``AT-2290``,
``gw-eu-07``, ``b7f3-22c9``) asks about the passages holding that exact string, however far
their meaning is from the few words around it: an embedding of a code says little, so such a
passage's cosine distance can sit far above the gate's cut while BM25 ranks it first. The gate
(:func:`rag_pipeline.core.answer.gate.apply_gate`) keeps a hit that holds one verbatim, first.

An identifier is a word of the question (split at white space, surrounding punctuation
stripped) of at least :data:`MIN_LENGTH` characters made of letters and digits in runs joined
by ``- _ . /``, with a digit (``INV-0045-QZ``, ``4.8.2``): a code, not a word such as
``sqlite3`` or ``float32``, nor code such as ``lst[0]``. A hit holds it when its content has it case-insensitively
with no letter or digit on either side. It counts only when at most :data:`MAX_HOLDERS` of the
ranked hits hold it: a string in many passages (``utf-8`` in a Python manual) names nothing in
particular.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["MAX_HOLDERS", "MIN_LENGTH", "held_identifiers", "question_identifiers"]

MIN_LENGTH = 4
MAX_HOLDERS = 3
_EDGES = "\"'`()[]{}<>,;:!?*"
_CODE = re.compile(r"[A-Za-z0-9]+(?:[-_./][A-Za-z0-9]+)+")


def question_identifiers(question: str) -> tuple[str, ...]:
    """The identifiers ``question`` names, in order, each once (``("INV-0045-QZ",)`` for "what
    is the status of INV-0045-QZ?")."""
    found: list[str] = []
    for word in question.split():
        word = word.strip(_EDGES).rstrip(".")
        if len(word) < MIN_LENGTH or not _CODE.fullmatch(word) or not any(c.isdigit() for c in word):
            continue
        if word.lower() not in (f.lower() for f in found):
            found.append(word)
    return tuple(found)


def held_identifiers(question: str, contents: Sequence[str]) -> list[str]:
    """For each ranked content, the first of the question's identifiers it holds verbatim that
    at most :data:`MAX_HOLDERS` of the contents hold; ``""`` for a content holding none."""
    held = [""] * len(contents)
    for identifier in question_identifiers(question):
        pattern = re.compile(rf"(?<![^\W_]){re.escape(identifier)}(?![^\W_])", re.IGNORECASE)
        holders = [i for i, content in enumerate(contents) if pattern.search(content)]
        if len(holders) > MAX_HOLDERS:
            continue
        for i in holders:
            held[i] = held[i] or identifier
    return held
