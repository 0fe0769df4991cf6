"""Codes a question names, and the ranked chunks that hold them verbatim.

A question that names an invoice, a ticket, a host or a build (``INV-0045-QZ``, ``AT-2290``,
``gw-eu-07``, ``b7f3-22c9``) asks about the passages holding that exact string, however far
their meaning is from the few words around it: an embedding of a code says little, so such a
passage's cosine distance can sit far above the gate's cut while BM25 ranks it first. The gate
(:func:`rag_pipeline.core.answer.gate.apply_gate`) keeps a hit that holds one verbatim, first
(:func:`held_identifiers`).

A code is a word of the question (split at white space; surrounding punctuation, ``#`` and a
possessive ``'s`` stripped; Unicode dashes read as ``-``) of at least :data:`MIN_LENGTH`
characters made of letters and digits in runs joined by ``- _ . /``, with a letter and a run of
two digits or more (``INV-0045-QZ``, ``gw-eu-07``), or runs of letters, two or more, then one
digit run last (a host or a region: ``lb-west-3``, ``us-east-1``; not a phrase,
``tier-1-support``, ``phase-1/phase-2``), or one to four letters then four digits or more with
no separator (an employee's or an order's number, ``E31361``, ``PO999999``): not a number, a
date or an address (``10.5``, ``2026-03-14``), not a version or a name with one digit
(``gpt-4``, ``TLS-1.3``), not a word (``sqlite3``, ``float32``, ``sha256``) nor code
(``lst[0]``). A hit holds it when its embedded text (its words, and the header naming its
document's title and section: a mail whose subject names an incident) has it, case aside, as a
whole code: no letter or digit on either side, nor a separator continuing it (``INV-0045`` is
not held by ``INV-0045-QZ``). It counts only when the ranked hits holding it are in at most
:data:`MAX_HOLDING_DOCUMENTS` documents (a string all over the corpus names nothing in
particular; a warehouse's code in its register's row, its inventory, its roster and four rows of
a shipments table does), and then for its :data:`MAX_HOLDERS` best-ranked holders (those the
question's other words rank first).

A code the passages lack (:func:`unheld_identifiers`): a code the question names that no ranked
hit holds, while they hold a code of its shape (``INV-2026-0042`` for ``INV-2026-9999``,
``gw-eu-07`` for ``gw-eu-09``: the same letters and separators, other digits), is named beside
the answer: its look-alikes' passages are not about it. When it is a record number
(:func:`is_record_number`: a run of three digits or more and either a run of two letters or
more, ``INV-2026-9999``, or letters alone joined by ``-`` or ``_`` to three digits, ``E-4099``,
or followed by four, ``E39999``; not ``Q3-2026``, ``H.264``), the question asks about a record
the corpus does not hold: the gate refuses it, however close the look-alike rows of the same
table are, unless a ranked hit holds another code it names (then the answer is about that one,
and says which record is not held). A host or a build (``gw-eu-09``, ``b7f3-22c0``) is answered,
with the note: a runbook written for one host may serve its neighbour.

A command's option the question names (:data:`OPTION`: ``--depth``, ``--one-file-system``,
``-k``, find's ``-mtime``) is held the same way, case kept (``-k`` is not ``-K``): a manual
lists a tool's options a few to a chunk, so the chunk holding ``--depth`` is a blend of four
entries to an embedding, while a question names it exactly. An option is no record: one the
passages lack is no reason to refuse."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import NamedTuple

__all__ = ["MAX_CODES", "MAX_HOLDERS", "MAX_HOLDING_DOCUMENTS", "MIN_LENGTH", "OPTION",
           "RankedCodes", "held_identifiers", "holds_code", "holds_look_alike", "is_option",
           "is_record_number", "names_identifiers", "question_identifiers", "question_options",
           "ranked_codes", "unheld_identifiers", "without_identifiers"]

MIN_LENGTH = 4
MAX_HOLDERS = 3
"""A code counts for at most this many of its holders, the best-ranked."""
MAX_HOLDING_DOCUMENTS = 5
"""A code held by ranked hits in more documents than this names nothing in particular."""
MAX_CODES = 10
"""At most this many codes of a question are looked for (a question pasting a log is no lookup)."""
_EDGES = "\"'`()[]{}<>,;:!?*#\u201c\u201d\u2018\u2019\u00ab\u00bb"
_DASHES = str.maketrans({dash: "-" for dash in "\u2010\u2011\u2012\u2013\u2014\u2212"})
_CODE = re.compile(r"(?<![A-Za-z0-9])(?:[A-Za-z0-9]+(?:[-_./][A-Za-z0-9]+)+"
                   r"|[A-Za-z]{1,4}\d{4,}(?![A-Za-z0-9]))")
_WHOLE = r"(?<![A-Za-z0-9])(?<![A-Za-z0-9][-_./])({})(?![A-Za-z0-9])(?![-_./][A-Za-z0-9])"
OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*(?<!-)(?![\w-])")
"""A command's option as a manual writes it (``--one-file-system``, ``-N``, ``-mtime``)."""


def without_identifiers(question: str) -> str:
    """``question`` without the codes it names (:func:`question_identifiers`), its other words
    as they are: what it asks about them ("what was the root cause of" for "what was the root
    cause of INC-2026-038?"); ``""`` when it is codes alone."""
    named = {code.lower() for code in question_identifiers(question)}
    if not named:
        return question
    kept = [word for word in question.split() if _code_of(word).lower() not in named]
    return " ".join(kept)


def _code_of(word: str) -> str:
    """``word`` as :func:`question_identifiers` reads it: dashes made ``-``, surrounding
    punctuation and a possessive ``'s`` stripped."""
    word = word.translate(_DASHES).strip(_EDGES)
    return re.sub(r"['\u2019]s$", "", word).rstrip(".").strip(_EDGES)


def question_identifiers(question: str) -> tuple[str, ...]:
    """The codes ``question`` names, in order, each once, at most :data:`MAX_CODES`
    (``("INV-0045-QZ",)`` for "what is the status of INV-0045-QZ's refund?")."""
    found: list[str] = []
    for word in map(_code_of, question.split()):
        if len(word) < MIN_LENGTH or not _CODE.fullmatch(word) or not _is_code(word):
            continue
        if word.lower() not in (f.lower() for f in found):
            found.append(word)
    return tuple(found[:MAX_CODES])


def question_options(question: str) -> tuple[str, ...]:
    """The options ``question`` names (:data:`OPTION`; Unicode dashes read as ``-``), in order,
    each once, case kept, at most :data:`MAX_CODES` (``("--depth",)`` for "What does git clone
    --depth do?")."""
    found = dict.fromkeys(OPTION.findall(question.translate(_DASHES)))
    return tuple(found)[:MAX_CODES]


def is_option(term: str) -> bool:
    """Whether a term a question names is an option (:data:`OPTION`), not a code."""
    return OPTION.fullmatch(term) is not None


def names_identifiers(question: str) -> bool:
    """Whether ``question`` names a code or an option (the ranked passages are then searched
    for them)."""
    return bool(question_identifiers(question) or question_options(question))


def _is_code(word: str) -> bool:
    """Whether letters and digits joined by separators are a code (the module docstring): a
    letter and a run of two digits, or runs of letters (two or more) and one run of digits,
    last."""
    runs = re.split(r"[-_./]", word)
    return bool(re.search(r"[A-Za-z]", word)) and (
        bool(re.search(r"\d\d", word))
        or (len(runs) >= 3 and runs[-1].isdigit() and all(run.isalpha() for run in runs[:-1])))


def _pattern(identifier: str) -> re.Pattern[str]:
    return re.compile(_WHOLE.format(re.escape(identifier)), re.IGNORECASE)


def _option_pattern(option: str) -> re.Pattern[str]:
    """``option`` whole (no letter, digit, ``_`` or ``-`` on either side), case kept."""
    return re.compile(rf"(?<![\w-]){re.escape(option)}(?![\w-])")


def _shape(code: str) -> str:
    """A code with each run of digits as ``#``, case aside (``inv-#-#`` for ``INV-2026-0042``)."""
    return re.sub(r"\d+", "#", code.lower())


def holds_code(text: str, code: str) -> bool:
    """Whether ``text`` holds ``code`` whole, case aside (``INV-0045`` is not held by
    ``INV-0045-QZ``)."""
    return _pattern(code.translate(_DASHES)).search(text.translate(_DASHES)) is not None


def holds_look_alike(text: str, codes: Sequence[str]) -> bool:
    """Whether ``text`` holds a code of the shape of one of ``codes`` but none of them
    (``INC-2026-044`` for ``INC-2026-038``: the same letters and separators, other digits)."""
    own = {code.translate(_DASHES).lower() for code in codes}
    shapes = {_shape(code) for code in own}
    return any(_shape(found) in shapes and found.lower() not in own
               for found in _codes_in(text.translate(_DASHES)))


def _codes_in(text: str) -> Iterator[str]:
    """The codes of ``text`` (its dashes read as ``-``); a code in a path or a URL
    (``erp/INV-2026-0042``) counts by each of its parts too."""
    for code in _CODE.findall(text):
        yield code
        if "/" in code:
            yield from code.split("/")


def is_record_number(code: str) -> bool:
    """A code with a run of three digits or more and either a run of two letters or more or a
    part of letters alone joined by ``-`` or ``_`` to three digits or more (``E-4099``) or
    followed by four (``E39999``); not a standard's name, ``H.264``, ``X.509``, nor a page,
    ``p.123``."""
    return bool(re.search(r"\d{3}", code)) and (
        bool(re.search(r"[A-Za-z]{2}", code))
        or re.search(r"(?<![A-Za-z0-9])[A-Za-z]+(?:[-_]\d{3,}|\d{4,})(?![A-Za-z])", code)
        is not None)


def unheld_identifiers(question: str, contents: Sequence[str]) -> tuple[str, ...]:
    """The codes the question names that no ranked content holds while one holds a code of the
    same shape (``INV-2026-9999`` beside ``INV-2026-0042``, ``gw-eu-09`` beside ``gw-eu-07``),
    whether or not another code it names is held; ``()`` when the question names none."""
    return ranked_codes(question, contents).unheld


class RankedCodes(NamedTuple):
    """What the ranked contents hold of the codes a question names.

    Attributes:
        held: Per content, :func:`held_identifiers`.
        unheld: :func:`unheld_identifiers`.
        any_held: A content holds one of the codes verbatim, however many documents hold it
            (a code all over the corpus marks no content as held, but the question is about
            something the corpus has).
    """

    held: list[str]
    unheld: tuple[str, ...]
    any_held: bool


def ranked_codes(question: str, contents: Sequence[str],
                 documents: Sequence[str] | None = None) -> RankedCodes:
    """:func:`held_identifiers` and :func:`unheld_identifiers` of the ranked contents (of
    ``documents``, one id per content; None: each content a document of its own), each content
    searched once for each code."""
    named = question_identifiers(question)
    options = question_options(question)
    if not named and not options:
        return RankedCodes([""] * len(contents), (), False)
    documents = documents if documents is not None else [str(i) for i in range(len(contents))]
    texts = [content.translate(_DASHES) for content in contents]
    patterns = {**{code: _pattern(code) for code in named},
                **{option: _option_pattern(option) for option in options}}
    holders = {term: [i for i, text in enumerate(texts) if pattern.search(text)]
               for term, pattern in patterns.items()}
    held = [""] * len(contents)
    for code, found in holders.items():
        if len({documents[i] for i in found}) <= MAX_HOLDING_DOCUMENTS:
            for i in found[:MAX_HOLDERS]:
                held[i] = held[i] or code
    any_held = any(holders[code] for code in named)
    missing = [code for code in named if not holders[code]]
    if not missing:
        return RankedCodes(held, (), any_held)
    shapes = {_shape(found) for text in texts for found in _codes_in(text)}
    return RankedCodes(held, tuple(code for code in missing if _shape(code) in shapes), any_held)


def held_identifiers(question: str, contents: Sequence[str],
                     documents: Sequence[str] | None = None) -> list[str]:
    """For each ranked content, the first of the question's codes it holds verbatim that
    counts (the module docstring: at most :data:`MAX_HOLDING_DOCUMENTS` documents hold it,
    and the content is one of its :data:`MAX_HOLDERS` best-ranked holders); ``""`` for the
    others."""
    return ranked_codes(question, contents, documents).held
