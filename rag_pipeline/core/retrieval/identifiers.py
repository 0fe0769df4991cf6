"""Identifiers a question names, and the ranked chunks that hold them verbatim.

A question that names an invoice, a ticket, a host or a build (``INV-0045-QZ``, ``AT-2290``,
``gw-eu-07``, ``b7f3-22c9``) asks about the passages holding that exact string, however far
their meaning is from the few words around it: an embedding of a code says little, so such a
passage's cosine distance can sit far above the gate's cut while BM25 ranks it first. The gate
(:func:`rag_pipeline.core.answer.gate.apply_gate`) keeps a hit that holds one verbatim, first.
A question naming a code no ranked hit holds while they hold codes of its shape
(``INV-2026-9999``, where the corpus has ``INV-2026-0042`` and ``INV-2026-0051``) asks about a
record the corpus does not hold: the gate refuses it, however close the look-alike rows of the
same table are (:func:`unheld_identifiers`).

An identifier is a word of the question (split at white space, surrounding punctuation
stripped) of at least :data:`MIN_LENGTH` characters made of letters and digits in runs joined
by ``- _ . /``, with a digit (``INV-0045-QZ``, ``4.8.2``): a code, not a word such as
``sqlite3`` or ``float32``, nor code such as ``lst[0]``. A hit holds it when its content has
it case-insensitively with no letter or digit on either side. It counts only when at most
:data:`MAX_HOLDERS` of the ranked hits hold it: a string in many passages (``utf-8`` in a
Python manual) names nothing in particular.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["MAX_HOLDERS", "MIN_LENGTH", "held_identifiers", "question_identifiers",
           "unheld_identifiers"]

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


def _pattern(identifier: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![^\W_]){re.escape(identifier)}(?![^\W_])", re.IGNORECASE)


def _shape(code: str) -> str:
    """A code with each run of digits as ``#``, case aside (``inv-#-#`` for ``INV-2026-0042``)."""
    return re.sub(r"\d+", "#", code.lower())


def unheld_identifiers(question: str, contents: Sequence[str]) -> tuple[str, ...]:
    """The codes (an identifier with a letter) the question names that no ranked content holds
    while one holds a code of the same shape (``INV-2026-9999`` beside ``INV-2026-0042``);
    ``()`` when the question names none, or one of its identifiers is held."""
    named = question_identifiers(question)
    if any(_pattern(identifier).search(content) for identifier in named for content in contents):
        return ()
    shapes = {_shape(code) for content in contents for code in _CODE.findall(content)}
    return tuple(identifier for identifier in named
                 if any(c.isalpha() for c in identifier) and _shape(identifier) in shapes)


def held_identifiers(question: str, contents: Sequence[str]) -> list[str]:
    """For each ranked content, the first of the question's identifiers it holds verbatim that
    at most :data:`MAX_HOLDERS` of the contents hold; ``""`` for a content holding none."""
    held = [""] * len(contents)
    for identifier in question_identifiers(question):
        pattern = _pattern(identifier)
        holders = [i for i, content in enumerate(contents) if pattern.search(content)]
        if len(holders) > MAX_HOLDERS:
            continue
        for i in holders:
            held[i] = held[i] or identifier
    return held
