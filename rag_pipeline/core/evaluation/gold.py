"""Gold sets scored: needles validated against the corpus, the queries each line yields, the
corpus check, and the drafting of a new set. The files themselves (gold JSONL, out-of-domain
JSONL) are read by :mod:`rag_pipeline.core.config.gold_file`, below this stage, because a model
declaration (``adapt.held_out``) names a gold set too.

Each gold line yields two queries (the documents' vocabulary, and the confused-user ticket). A
gold set is scored only against a corpus holding every document of its corpus line (else there
is no recall to report, and the evaluation says so in one line); a set without that line is
checked against any corpus. Needles are compared with white space collapsed. Validation runs
before any metric: a needle not found exactly once in the corpus, or found only in a heading, is
a gold-set error reported with its id, never scored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

from rag_pipeline.core.config.gold_file import (
    GoldFormatError,
    GoldLine,
    GoldSet,
    check_apart,
    load_gold_set,
    load_ood_if_any,
)
from rag_pipeline.core.ingest import DocumentStatus
from rag_pipeline.core.ingest.extracted import Section
from rag_pipeline.core.ingest.formats.markdown import front_matter_end, without_headings
from rag_pipeline.core.storage.table_names import DOCUMENTS
from rag_pipeline.core.storage.warehouse import Warehouse


class QueryStyle(StrEnum):
    QUESTION = "question"
    TICKET = "ticket"


@dataclass(frozen=True)
class GoldQuery:
    """One scored query: ``query_id`` is ``<line id>/<style>``."""

    query_id: str
    line_id: str
    style: QueryStyle
    text: str
    needle: str


@dataclass(frozen=True)
class DraftNeedle:
    """A candidate needle for ``rag-pipeline gold draft``: a sentence found once, in a body."""

    id: str
    document: str
    needle: str


@dataclass(frozen=True)
class GoldError:
    line_id: str
    reason: str


GOLD_ERRORS_LISTED = 20
"""Gold-set errors an evaluation prints or logs one a line; past them, how many more (the
``eval_gold_errors`` table and ``eval --json`` hold them all)."""


class NoGoldSetError(Exception):
    """No gold set was written for the indexed corpus: there is nothing to score."""


def collapse(text: str) -> str:
    return " ".join(text.split())


def check_corpus(gold: GoldSet, document_ids: Iterable[str]) -> None:
    """Refuses a gold set written for another corpus: one of its documents is not in the index.

    Raises:
        NoGoldSetError: one line naming the set, its corpus and how many documents are missing.
    """
    if not gold.lines:
        holds = "only its corpus line" if gold.corpus is not None else "it is empty"
        raise NoGoldSetError(f"no gold set for this corpus: {gold.path} holds no gold line "
                             f"({holds}); nothing to score. Fill in the lines `rag-pipeline "
                             "gold draft` wrote, or write some")
    if gold.corpus is None:
        return
    missing = sorted(set(gold.corpus.documents) - set(document_ids))
    if missing and len(missing) == len(gold.corpus.documents):
        raise NoGoldSetError(
            f"no gold set for this corpus: {gold.path} is the gold set of corpus {gold.corpus.name!r}, none "
            f"of whose {len(missing)} documents is in the index; nothing to score. Write one with "
            "`rag-pipeline gold draft --output gold.jsonl`, then `rag-pipeline eval --gold "
            "gold.jsonl` (or set RAG_PIPELINE_EVAL_DIR to its folder: `index` then scores it)")
    if missing:
        raise NoGoldSetError(
            f"no gold set for this corpus: {gold.path} was written for corpus "
            f"{gold.corpus.name!r}, and {len(missing)} of its {len(gold.corpus.documents)} "
            f"documents (first: {missing[0]!r}) are not in the index; nothing to score. If the "
            "set is this corpus's, correct those ids in its first line (or index the documents); "
            "else write one with `rag-pipeline gold draft`, then `rag-pipeline eval --gold FILE`")


def no_gold_set_reason(warehouse: Warehouse, gold_path: Path,
                       ood_path: Path | None = None) -> str | None:
    """Why the evaluation has nothing to score on the corpus the latest documents table holds
    (None: the gold set at ``gold_path`` is this corpus's): the file is missing, was written for
    another corpus (:func:`check_corpus`), or it or the out-of-domain file at ``ood_path``
    cannot be read (not in the documented format, not readable, or asking a gold line's
    question: :func:`check_apart`). The sensor launches no evaluation run and ``index`` waits
    for none while there is a reason: a broken gold file stops the evaluation alone, never the
    index's build."""
    if not Path(gold_path).is_file():
        return (f"no gold set for this corpus: {gold_path} does not exist; nothing to score. "
                "Write one with `rag-pipeline gold draft`")
    documents = warehouse.read_or_none(DOCUMENTS, columns=["document_id", "status"])
    ids = [] if documents is None else [
        row["document_id"] for row in documents.to_pylist() if row["status"] == DocumentStatus.OK]
    what = "gold set"
    try:
        gold = load_gold_set(Path(gold_path))
        check_corpus(gold, ids)
        if ood_path is not None:
            what = "out-of-domain set"
            check_apart(gold, load_ood_if_any(Path(ood_path)), Path(ood_path))
    except NoGoldSetError as exc:
        return str(exc)
    except (GoldFormatError, OSError) as exc:
        cause = str(exc) if isinstance(exc, GoldFormatError) else f"{exc.filename}: {exc.strerror}"
        return (f"the {what} cannot be read: {cause}. Nothing was scored now: figures in the "
                f"eval_* tables are an earlier evaluation's, of the {what} as it was then. Fix "
                "the file, and the next `rag-pipeline index` evaluates again")
    return None


def draft_needles(canonical_texts: Mapping[str, str], n: int, min_words: int = 8,
                  max_words: int = 40, sections: Mapping[str, Sequence[Section]] | None = None,
                  ) -> list[DraftNeedle]:
    """Up to ``n`` candidate needles for a new gold set: sentences of ``min_words`` to
    ``max_words`` words of prose, outside headings and within one paragraph, that :func:`validate_gold`
    accepts (found exactly once in the corpus), taken round-robin over the documents and spread
    evenly through each, so every document contributes before any gives a second; the documents
    taken folder by folder in turn (:func:`_folders_in_turn`), so a draft of fewer needles than
    documents samples every top-level folder, not the alphabetically first ones. ``sections``:
    each document's, where its headings are (:func:`chunked_text`)."""
    from rag_pipeline.core.retrieval.sentences import split_sentences

    per_document = {}
    for document_id in _folders_in_turn(sorted(canonical_texts)):
        paragraphs = re.split(r"\n\s*\n", chunked_text(document_id, canonical_texts[document_id],
                                                        (sections or {}).get(document_id)))
        sentences = [s for paragraph in paragraphs for s in split_sentences(paragraph)
                     if min_words <= len(s.split()) <= max_words and s[-1] in ".?!:"
                     and _is_prose(s)]
        per_document[document_id] = _spread(sentences)
    order = _in_turn([[(d, s) for s in sentences] for d, sentences in per_document.items()])
    chosen: list[DraftNeedle] = []
    batch = max(4 * n, 64)
    for start in range(0, len(order), batch):
        candidates = order[start:start + batch]
        lines = [GoldLine(str(i), s, "-", "-") for i, (_, s) in enumerate(candidates)]
        accepted = {q.line_id for q in validate_gold(lines, canonical_texts, sections)[0]}
        seen = {c.needle for c in chosen}
        for i, (document_id, sentence) in enumerate(candidates):
            if str(i) in accepted and sentence not in seen and len(chosen) < n:
                chosen.append(DraftNeedle(f"d{len(chosen) + 1:03d}", document_id, sentence))
                seen.add(sentence)
        if len(chosen) >= n:
            break
    return chosen


def _is_prose(sentence: str) -> bool:
    """Starts with a letter and is mostly letters and spaces (not a code comment or a table)."""
    letters = sum(ch.isalpha() or ch.isspace() for ch in sentence)
    return sentence[0].isalpha() and letters >= 0.85 * len(sentence)


def _folders_in_turn(document_ids: list[str]) -> list[str]:
    """``document_ids`` (sorted) ordered so that each top-level folder gives a document before
    any gives a second (a folder's own order spread: :func:`_spread`); the files outside any
    folder are one folder."""
    folders: dict[str, list[str]] = {}
    for document_id in document_ids:
        folders.setdefault(document_id.split("/", 1)[0] if "/" in document_id else "", []).append(
            document_id)
    return _in_turn([_spread(ids) for ids in folders.values()])


T = TypeVar("T")


def _in_turn(lists: list[list[T]]) -> list[T]:
    """The lists' items round-robin: every list's first, then every list's second, ..."""
    return [items[depth] for depth in range(max(map(len, lists), default=0))
            for items in lists if depth < len(items)]


def _spread(items: list[str]) -> list[str]:
    """The items reordered so that any prefix is spread evenly over the list (bisection order:
    the middle, then the quarters, ...)."""
    out, seen, step = [], set(), len(items)
    while step >= 1 and len(out) < len(items):
        for i in range(step // 2, len(items), max(step, 1)):
            if i not in seen:
                seen.add(i)
                out.append(items[i])
        step //= 2
    out += [item for i, item in enumerate(items) if i not in seen]
    return out


def draft_jsonl(name: str, needles: Iterable[DraftNeedle]) -> str:
    """The draft gold file: the corpus line, then one line per needle with ``question`` and
    ``ticket`` left empty for the user to write (the file is refused until they are)."""
    needles = list(needles)
    header = {"corpus": name, "documents": sorted({n.document for n in needles})}
    lines = [json.dumps(header, ensure_ascii=False)]
    lines += [json.dumps({"id": n.id, "document": n.document, "needle": n.needle,
                          "question": "", "ticket": ""}, ensure_ascii=False) for n in needles]
    return "\n".join(lines) + "\n"


def _holder(needle: str, collapsed: Mapping[str, str]) -> str:
    """The document whose collapsed text holds ``needle``."""
    return next(doc_id for doc_id, text in collapsed.items() if needle in text)


NOT_FOUND = ("needle not found in the corpus; needles match the extracted text, as the chunks' "
             "`content` holds it (a CSV or sheet row reads `column: value | column: value`)")


def _markdown(document_id: str) -> bool:
    """Whether a document is Markdown by its name (``.md``, ``.md.gz``): its underlined lines are
    headings, in no chunk; a plain-text file's are in its chunks."""
    from pathlib import PurePosixPath

    from rag_pipeline.core.ingest.formats import format_for

    fmt = format_for(PurePosixPath(document_id.removesuffix(".gz")))
    return fmt is not None and fmt.name == "markdown"


def chunked_text(document_id: str, text: str, sections: Sequence[Section] | None = None) -> str:
    """What the chunks of a document are cut from, its parts joined by blank lines: the bodies
    of its ``sections`` (:func:`~rag_pipeline.core.chunking.strategies.body_sections`: a heading,
    an HTML page's ``<h2>`` or a manual page's ``.SH``, is in none); without them (a caller that
    has the text alone), the text but its front matter and its Markdown headings."""
    if sections:
        from rag_pipeline.core.chunking.strategies import body_sections

        return "\n\n".join(text[s.start:s.end] for s in body_sections(text, "", sections))
    return without_headings(text[front_matter_end(text):], setext=_markdown(document_id))


def validate_gold(lines: Iterable[GoldLine], canonical_texts: Mapping[str, str],
                  sections: Mapping[str, Sequence[Section]] | None = None,
                  ) -> tuple[list[GoldQuery], list[GoldError]]:
    """Splits the gold lines into scored queries and errors. A needle must occur exactly once
    in the corpus (white space collapsed, front matter left out: it is in no chunk), outside
    headings (each document's ``sections``, else its Markdown heading lines: :func:`chunked_text`),
    in the line's ``document`` when it names one, and in no earlier line that is scored (a
    passage scored twice would count twice in every figure)."""
    sections = sections or {}
    collapsed = {doc_id: collapse(text[front_matter_end(text):])
                 for doc_id, text in canonical_texts.items()}
    body_only = {doc_id: collapse(chunked_text(doc_id, text, sections.get(doc_id)))
                 for doc_id, text in canonical_texts.items()}
    queries, errors = [], []
    scored_by: dict[str, str] = {}
    for line in lines:
        needle = collapse(line.needle)
        found = sum(text.count(needle) for text in collapsed.values())
        in_body = sum(text.count(needle) for text in body_only.values())
        if (first := scored_by.get(needle)) is not None:
            errors.append(GoldError(line.id, f"the same needle as line {first!r}: a passage is "
                                             "scored once"))
        elif line.document is not None and line.document not in collapsed:
            errors.append(GoldError(line.id, f"its document {line.document!r} is not among the "
                                             "indexed documents"))
        elif found == 0:
            errors.append(GoldError(line.id, NOT_FOUND))
        elif found > 1:
            errors.append(GoldError(line.id, f"needle found {found} times in the corpus, not once"))
        elif in_body == 0:
            errors.append(GoldError(line.id, "needle is a heading"))
        elif line.document is not None and needle not in collapsed[line.document]:
            errors.append(GoldError(line.id, f"needle is not in its document {line.document!r} "
                                             f"(it is in {_holder(needle, collapsed)!r})"))
        else:
            scored_by[needle] = line.id
            queries += [GoldQuery(f"{line.id}/{style.value}", line.id, style,
                                  line.question if style is QueryStyle.QUESTION else line.ticket,
                                  needle) for style in QueryStyle]
    return queries, errors
