"""The gold-set and out-of-domain files, read into typed values with one-line errors.

Gold JSONL: ``{"id", "needle", "question", "ticket"}``, optionally ``"groups": [...]``: the
groups the line is for (``eval --groups`` scores a line for those groups only), and
``"document"``: the id of the document its needle is in (``gold draft`` writes it; the needle
is then checked to be there). A first line
``{"corpus": NAME, "documents": [ids]}`` records the corpus the set was written for: the
documents its needles come from. Out-of-domain JSONL: ``{"id", "query", "kind": "near" | "off"}``.

The format sits in the configuration stage, below evaluation, because a model declaration names
a gold set (``adapt.held_out``, read for its corpus line's documents); what a gold set means when
scored (needle validation, the queries, the corpus check) is
:mod:`rag_pipeline.core.evaluation.gold`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from rag_pipeline.core.text.arguments import listed
from rag_pipeline.core.text.jsonl import MAX_JSONL_BYTES, jsonl_objects, missing_fields, not_text


class OodKind(StrEnum):
    NEAR = "near"
    OFF = "off"


@dataclass(frozen=True)
class GoldLine:
    id: str
    needle: str
    question: str
    ticket: str
    groups: tuple[str, ...] = ()
    document: str | None = None
    """The document the needle is in, when the line names it."""


@dataclass(frozen=True)
class OodLine:
    id: str
    query: str
    kind: OodKind


@dataclass(frozen=True)
class GoldCorpus:
    """The corpus a gold set was written for: a name, and the documents its needles are in."""

    name: str
    documents: tuple[str, ...]


@dataclass(frozen=True)
class GoldSet:
    path: Path
    corpus: GoldCorpus | None
    lines: tuple[GoldLine, ...]


class GoldFormatError(ValueError):
    """A gold or out-of-domain file is not in the documented format."""


FEEDBACK_FIELDS = ("shown_sources", "comments")
"""What a gold line drafted from feedback carries to go by (``rag-pipeline feedback draft``)."""


OWN_FIELD_PREFIX = "_"
"""A field of a user's own in a gold or out-of-domain line (``"_note"``) starts with this; any
other field the format does not name is refused, so a misspelt ``documnet`` never passes
silently (its check off)."""


def _read_jsonl(path: Path, required: tuple[str, ...], header: list[dict] | None = None,
                optional: tuple[str, ...] = (), known: tuple[str, ...] = ()) -> list[tuple[int, dict]]:
    """The rows of a JSONL file with their line numbers, each with its ``required`` fields (and
    any of its ``optional`` ones) non-empty strings, no field but those, ``known`` ones and the
    user's own (:data:`OWN_FIELD_PREFIX`), and a unique ``id``; with ``header``, a first row
    holding ``corpus`` and no ``id`` is appended to it instead of returned."""
    import difflib

    rows = []
    first_line: dict[str, int] = {}
    fields = (*required, *optional, *known)
    for number, row in jsonl_objects(path, GoldFormatError):
        if header is not None and not rows and not header and "corpus" in row and "id" not in row:
            header.append(row)
            continue
        if header is not None and "corpus" in row and "id" not in row:
            raise GoldFormatError(f"{path}:{number}: a corpus line must be the file's first line")
        for name in row:
            if name not in fields and not name.startswith(OWN_FIELD_PREFIX):
                close = difflib.get_close_matches(name, fields, n=1)
                hint = f"did you mean `{close[0]}`?" if close else f"a line holds {listed(fields)}"
                raise GoldFormatError(f"{path}:{number}: unknown field `{name}`: {hint} (a field "
                                      f"of your own starts with `{OWN_FIELD_PREFIX}`)")
        if (wrong := not_text(row, (*required, *optional))) is not None:
            raise GoldFormatError(f"{path}:{number}: `{wrong[0]}` must be a string, not {wrong[1]}")
        missing = missing_fields(row, (*required, *(o for o in optional if o in row)))
        if missing:
            raise GoldFormatError(f"{path}:{number}: missing or empty {listed(missing)}")
        if (first := first_line.setdefault(row["id"], number)) != number:
            raise GoldFormatError(f"{path}:{number}: id {row['id']!r} is already the id of line "
                                  f"{first}")
        rows.append((number, row))
    return rows


def load_gold_set(path: Path) -> GoldSet:
    """The gold lines and, from the first line when it has one, the corpus they were written for.

    Raises:
        GoldFormatError: a line or the corpus line is not in the documented format.
    """
    header: list[dict] = []
    numbered = _read_jsonl(path, ("id", "needle", "question", "ticket"), header, ("document",),
                           ("groups", *FEEDBACK_FIELDS))
    rows = [row for _, row in numbered]
    corpus = None
    if header:
        name, documents = header[0].get("corpus"), header[0].get("documents")
        if (not isinstance(name, str) or not name.strip() or not isinstance(documents, list)
                or not documents or not all(isinstance(d, str) and d for d in documents)):
            raise GoldFormatError(f'{path}:1: the corpus line must be {{"corpus": "<name>", '
                                  '"documents": ["<document id>", ...]}')
        corpus = GoldCorpus(name, tuple(sorted(set(documents))))
    for number, row in numbered:
        groups = row.get("groups", [])
        if not isinstance(groups, list) or not all(isinstance(g, str) and g for g in groups):
            raise GoldFormatError(f"{path}:{number}: `groups` must be a list of group names, got "
                                  f"{groups!r}")
    _refuse_repeats(path, [(number, row["question"]) for number, row in numbered], "question",
                    ": two answers to one question score one of them as missed")
    return GoldSet(path, corpus, tuple(GoldLine(r["id"], r["needle"], r["question"], r["ticket"],
                                                tuple(r.get("groups", ())), r.get("document"))
                                       for r in rows))


def _asked(text: str) -> str:
    """What makes two questions one: their words, white space and case aside."""
    return " ".join(text.split()).casefold()


def _refuse_repeats(path: Path, texts: list[tuple[int, str]], what: str, why: str = "") -> None:
    """Refuses a ``what`` (a question, a query) that an earlier line asks already
    (:func:`_asked`), naming both lines."""
    asked: dict[str, int] = {}
    for number, text in texts:
        if (first := asked.setdefault(_asked(text), number)) != number:
            raise GoldFormatError(f"{path}:{number}: the same {what} as line {first}{why}")


def check_apart(gold: GoldSet, ood: Sequence[OodLine], ood_path: Path) -> None:
    """Refuses an out-of-domain question that is a gold line's question or ticket
    (:func:`_asked`): it cannot be both answered from the documents and not.

    Raises:
        GoldFormatError: naming the out-of-domain line and the gold line.
    """
    asked = {}
    for line in gold.lines:
        for text in (line.question, line.ticket):
            asked.setdefault(_asked(text), line.id)
    for line in ood:
        if (gold_id := asked.get(_asked(line.query))) is not None:
            raise GoldFormatError(f"{ood_path}: out-of-domain question {line.id!r} is asked by gold "
                                  f"line {gold_id!r} of {gold.path}: a question cannot be both "
                                  "answered from the documents and not")


def load_gold(path: Path) -> list[GoldLine]:
    return list(load_gold_set(path).lines)


GOLD_SET_INPUT = "gold set"
OOD_SET_INPUT = "out-of-domain set"
EVAL_SET_INPUTS = (GOLD_SET_INPUT, OOD_SET_INPUT)
"""The inputs an evaluation records beside the generations it scored (names no chunker has)."""


def eval_set_inputs(gold_path: Path, ood_path: Path | None) -> dict[str, str]:
    """The gold and out-of-domain files as an evaluation's inputs: the first 16 hex digits of
    each file's sha256 (``none`` for a file that is not there, or not given). A changed file is
    a changed input: the evaluation is due again."""
    def digest(path: Path | None) -> str:
        try:
            return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16] if path else "none"
        except FileNotFoundError:
            return "none"

    return {GOLD_SET_INPUT: digest(gold_path), OOD_SET_INPUT: digest(ood_path)}


def no_ood_note(path: Path) -> str | None:
    """What an evaluation without out-of-domain questions says (None: ``path`` holds some)."""
    path = Path(path)
    if not path.is_file():
        why = "does not exist"
    elif path.stat().st_size <= MAX_JSONL_BYTES and not path.read_bytes().strip():
        why = "is empty"
    else:
        return None
    return (f"no out-of-domain questions ({path} {why}): the refusal gate is measured "
            "on the in-domain questions alone (one JSON line per question that the documents "
            'do not answer there: {"id": "o1", "query": "...", "kind": "near" or "off"})')


def load_ood_if_any(path: Path) -> list[OodLine]:
    """:func:`load_ood` of ``path``, or no line when there is no such file: a team's gold set
    drafted with ``gold draft`` comes without out-of-domain questions, and the refusal gate is
    then measured on its in-domain questions alone."""
    return load_ood(path) if Path(path).is_file() else []


def load_ood(path: Path) -> list[OodLine]:
    rows = _read_jsonl(path, ("id", "query", "kind"))
    for number, row in rows:
        if row["kind"] not in {k.value for k in OodKind}:
            raise GoldFormatError(f"{path}:{number}: kind must be 'near' or 'off', not "
                                  f"{row['kind']!r}")
    _refuse_repeats(path, [(number, row["query"]) for number, row in rows], "query")
    return [OodLine(r["id"], r["query"], OodKind(r["kind"])) for _, r in rows]
