"""Gold sets: questions whose answer is a verbatim needle, and questions that have no answer.

Gold JSONL: ``{"id", "needle", "question", "ticket"}``; each line yields two queries (the
documents' vocabulary, and the confused-user ticket). Out-of-domain JSONL:
``{"id", "query", "kind": "near" | "off"}``. Needles are compared with white space collapsed.
Validation runs before any metric: a needle not found exactly once in the corpus, or found only
in a heading, is a gold-set error reported with its id, never scored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from rag_pipeline.core.ingest.formats.markdown import without_headings


class QueryStyle(StrEnum):
    QUESTION = "question"
    TICKET = "ticket"


class OodKind(StrEnum):
    NEAR = "near"
    OFF = "off"


@dataclass(frozen=True)
class GoldLine:
    id: str
    needle: str
    question: str
    ticket: str


@dataclass(frozen=True)
class OodLine:
    id: str
    query: str
    kind: OodKind


@dataclass(frozen=True)
class GoldQuery:
    """One scored query: ``query_id`` is ``<line id>/<style>``."""

    query_id: str
    line_id: str
    style: QueryStyle
    text: str
    needle: str


@dataclass(frozen=True)
class GoldError:
    line_id: str
    reason: str


class GoldFormatError(ValueError):
    """A gold or out-of-domain file is not in the documented format."""


def collapse(text: str) -> str:
    return " ".join(text.split())


def _read_jsonl(path: Path, required: tuple[str, ...]) -> list[dict]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise GoldFormatError(f"{path}:{number}: not JSON: {exc.msg}") from exc
        if not isinstance(row, dict):
            raise GoldFormatError(f"{path}:{number}: a line must be a JSON object, not "
                                  f"{type(row).__name__}")
        missing = [k for k in required if not isinstance(row.get(k), str) or not row[k].strip()]
        if missing:
            raise GoldFormatError(f"{path}:{number}: missing or empty {missing}")
        rows.append(row)
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise GoldFormatError(f"{path}: duplicate ids {sorted({i for i in ids if ids.count(i) > 1})}")
    return rows


def load_gold(path: Path) -> list[GoldLine]:
    return [GoldLine(r["id"], r["needle"], r["question"], r["ticket"])
            for r in _read_jsonl(path, ("id", "needle", "question", "ticket"))]


def load_ood(path: Path) -> list[OodLine]:
    rows = _read_jsonl(path, ("id", "query", "kind"))
    bad = [r["id"] for r in rows if r["kind"] not in {k.value for k in OodKind}]
    if bad:
        raise GoldFormatError(f"{path}: kind must be 'near' or 'off' for {bad}")
    return [OodLine(r["id"], r["query"], OodKind(r["kind"])) for r in rows]


def validate_gold(lines: Iterable[GoldLine], canonical_texts: Mapping[str, str],
                  ) -> tuple[list[GoldQuery], list[GoldError]]:
    """Splits the gold lines into scored queries and errors. A needle must occur exactly once
    in the corpus (white space collapsed) and outside heading lines."""
    collapsed = {doc_id: collapse(text) for doc_id, text in canonical_texts.items()}
    body_only = {doc_id: collapse(without_headings(text))
                 for doc_id, text in canonical_texts.items()}
    queries, errors = [], []
    for line in lines:
        needle = collapse(line.needle)
        found = sum(text.count(needle) for text in collapsed.values())
        in_body = sum(text.count(needle) for text in body_only.values())
        if found == 0:
            errors.append(GoldError(line.id, "needle not found in the corpus"))
        elif found > 1:
            errors.append(GoldError(line.id, f"needle found {found} times in the corpus, not once"))
        elif in_body == 0:
            errors.append(GoldError(line.id, "needle is a heading"))
        else:
            queries += [GoldQuery(f"{line.id}/{style.value}", line.id, style,
                                  line.question if style is QueryStyle.QUESTION else line.ticket,
                                  needle) for style in QueryStyle]
    return queries, errors
