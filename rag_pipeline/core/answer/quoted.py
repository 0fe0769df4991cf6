"""An answer quoted exactly: the one to three sentences of the cited sources closest to the question.

No chat model writes anything: every sentence is a slice of a cited chunk's ``content``, which is
``canonical_text[from:to]`` of its document, so each quoted sentence is
``canonical_text[start:end]`` of that document by construction (and :func:`check_quoted` proves
it against the texts). Sentences are split at sentence ends and blank lines as the multi-vector
scorer splits them (:mod:`rag_pipeline.core.retrieval.sentences`), but with their offsets kept,
a table row is a sentence of its own, and a heading (the title of the document or section) or a
question none;
each is embedded with its chunk's context header in front (as the chunk itself was embedded)
and scored by its cosine similarity to the question plus ``term_weight`` times the share of the
question's terms it holds (the BM25 analyzer's terms; a term-overlap score in the spirit of
Luhn's sentence significance, 1958). The best sentence is kept, and up to ``max_sentences - 1``
more within ``margin`` of its score.

A question naming a label (``Tier A``, ``Plan B``, ``Phase 2``: a word, then a capital letter or
a number) is answered by the sentences naming that label when any does: one naming the same word
with another mark (``Tier C``, ``Phase 3``) is dropped then; an item of a list under a section
named by the word names the mark leading it (``3 The rollback failed.`` under EXIT STATUS, for
"what does exit status 3 mean"). A letter is a stopword or too short
for the terms, and the rows of one table are as close to the question as each other, so without
this a row of ``Tier C`` could be quoted for ``Tier A``.

A question naming a code (``INC-2026-038``, ``WH-0452``: :mod:`rag_pipeline.core.retrieval.
identifiers`) is answered, the same way, from the paragraphs and table rows holding it when any
does: a sentence whose paragraph (or row) holds only look-alikes of it (``INC-2026-044``) is
about another record. Without this, "Who was the incident commander for INC-2026-038?" quoted
the next incident's "Incident commander: Luis Moreno." from the same chunk. An option or a
name in capitals the question names (``--one-file-system``, ``HISTSIZE``) keeps, the same way,
the sentences about it: its own section's, when a cited section is titled by it, or the
paragraphs holding the option (:func:`_of_the_named_terms`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rag_pipeline.core.answer.citations import Citation
from rag_pipeline.core.retrieval.identifiers import (
    OPTION,
    holds_code,
    holds_look_alike,
    question_identifiers,
)
from rag_pipeline.core.text.analyzers import ENGLISH_STOPWORDS, Analyzer, analyze
from rag_pipeline.core.text.sentence_ends import MIN_SENTENCE_CHARS, SENTENCE_END, sentence_length

if TYPE_CHECKING:  # numpy only where sentences are scored: printing an answer needs none
    import numpy as np

__all__ = ["QuoteSettings", "QuoteTables", "QuotedSentence", "check_quoted", "choose_sentences",
           "question_labels", "quoted_answer", "sentence_spans"]

MAX_SENTENCE_CHARS = 400
"""A longer piece (a list without full stops) is cut at its line ends."""



@dataclass(frozen=True)
class QuotedSentence:
    """One quoted sentence: ``text == canonical_text[start:end]`` of source ``citation``'s document.

    Attributes:
        text: The sentence, exactly as the document's canonical text holds it.
        citation: The 1-based number of the source it is quoted from.
        start: Its first character in the document's canonical text.
        end: One past its last character.
        score: What chose it (cosine similarity plus the term share, weighted).
        fragment: Where the sentence itself is, in its format's notation (``#page=3`` of a
            source that starts on page 1, a sheet row's cells); ``""`` when not located.
        shown: Its words as a reader sees them (Markdown's markup left out:
            :meth:`DocumentFormat.shown_quote`); ``""`` when that is ``text`` itself.
        columns: For a table row whose cells are not named in it (a Markdown, HTML, Word or
            slide table's), its table's header row: what its values are; else ``""``.
    """

    text: str
    citation: int
    start: int
    end: int
    score: float = field(default=0.0, compare=False)
    fragment: str = ""
    shown: str = ""
    columns: str = ""

    def to_json(self) -> dict[str, object]:
        return {"text": self.text, "citation": self.citation, "from": self.start, "to": self.end,
                "fragment": self.fragment, "shown": self.shown or self.text,
                "columns": self.columns}


@dataclass(frozen=True)
class QuoteSettings:
    """How sentences are chosen.

    Attributes:
        max_sentences: At most this many sentences (1 to 3).
        margin: A sentence after the best is kept only when its score is within this of the
            best's (0.1 quoted the gold needle more often than 0.03 on the bundled gold set:
            :mod:`rag_pipeline.benchmarks.quoted_answer`).
        term_weight: Weight of the share of the question's terms a sentence holds, added to its
            cosine similarity (0: the embedding alone).
        in_context: A sentence's similarity is the best of its own and those of the two texts
            it makes with the sentence before and the sentence after it in its quote ("GNU sed
            does this by creating a temporary file" answers "how does sed -i edit in place"
            only with the sentence "this" points back to); a table row is read alone. False:
            each sentence alone.
        analyzer: The analyzer whose terms are counted.
    """

    max_sentences: int = 3
    margin: float = 0.1
    term_weight: float = 0.25
    in_context: bool = True
    analyzer: Analyzer = Analyzer.ENGLISH

    def __post_init__(self) -> None:
        if not 1 <= self.max_sentences <= 3:
            raise ValueError(f"max_sentences must be 1 to 3, got {self.max_sentences}")
        if self.margin < 0 or self.term_weight < 0:
            raise ValueError("margin and term_weight must not be negative")


def _stripped(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _line_cuts(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``text[start:end]`` cut at line ends into pieces of whole lines, each at most
    MAX_SENTENCE_CHARS long where its lines allow (a single longer line stays whole)."""
    pieces: list[tuple[int, int]] = []
    piece_start = start
    line_start = start
    while line_start < end:
        newline = text.find("\n", line_start, end)
        line_end = end if newline == -1 else newline
        if line_end - piece_start > MAX_SENTENCE_CHARS and line_start > piece_start:
            pieces.append((piece_start, line_start - 1))
            piece_start = line_start
        line_start = line_end + 1
    pieces.append((piece_start, end))
    return [span for span in (_stripped(text, s, e) for s, e in pieces) if span[0] < span[1]]


def sentence_spans(text: str, rows: Sequence[tuple[int, int]] = (),
                   skipped: Sequence[tuple[int, int]] = (),
                   titles: Collection[str] = ()) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text``, in order, white space trimmed from both
    ends.

    Each of ``rows`` (spans of ``text`` that are table rows: the document's own,
    :func:`~rag_pipeline.core.ingest.tables.row_spans`) is one sentence (none when it holds no
    letter or digit; a row over MAX_SENTENCE_CHARS, a web page laid out in a table cell, split
    as prose), and each of ``skipped`` (a table's header row, a span that answers nothing) none.
    The prose between them is split at sentence ends and blank lines, a piece that is one of
    ``titles`` (a heading line) dropped, a piece under MIN_SENTENCE_CHARS joined to the next
    (the last to the previous), a piece over MAX_SENTENCE_CHARS cut at its line ends."""
    marks = sorted([(s, e, True) for s, e in rows] + [(s, e, False) for s, e in skipped])
    spans: list[tuple[int, int]] = []
    prose_start = 0
    for mark_start, mark_end, is_row in marks:
        spans += _prose_spans(text, prose_start, mark_start, titles)
        start, end = _stripped(text, max(mark_start, prose_start), mark_end)
        if is_row and end - start > MAX_SENTENCE_CHARS:
            spans += _prose_spans(text, start, end, titles)
        elif is_row and any(char.isalnum() for char in text[start:end]):
            spans.append((start, end))
        prose_start = max(prose_start, mark_end)
    return spans + _prose_spans(text, prose_start, len(text), titles)


def is_title(piece: str, titles: Collection[str]) -> bool:
    """Whether ``piece`` is one of ``titles`` (white space collapsed; a Markdown heading's
    ``#`` marks left out)."""
    return " ".join(piece.lstrip("#").split()) in titles


_CAPITALISED = re.compile(r"[A-Z][\w'’-]*")
_UNDERLINED = re.compile(r"[^\n]*\S[^\n]*\n[ \t]*([*=~^+#.-])\1{2,}[ \t]*")
"""One line over a line of one punctuation mark repeated: a heading as Info, reStructuredText
and AsciiDoc set it (``Installing\n**********``)."""


def underlined(piece: str) -> bool:
    """Whether ``piece`` is a heading underlined (:data:`_UNDERLINED`): it answers nothing."""
    return _UNDERLINED.fullmatch(piece.strip()) is not None


def heading_like(piece: str) -> bool:
    """A line of two to eight words, every word of four letters or more capitalised, with no
    sentence's end (``Maximum Number Of Columns``): another section's heading inside a quote,
    which answers nothing."""
    words = piece.split()
    long_words = [word for word in words if len(word) >= 4]
    return (2 <= len(words) <= 8 and "\n" not in piece.strip() and piece.rstrip()[-1:] not in ".!?:;"
            and len(long_words) >= 2 and all(_CAPITALISED.fullmatch(word) for word in long_words))


def _prose_spans(text: str, begin: int, finish: int,
                 titles: Collection[str] = ()) -> list[tuple[int, int]]:
    """The sentences of ``text[begin:finish]`` (:func:`sentence_spans` without table rows)."""
    raw: list[tuple[int, int]] = []
    position = begin
    for match in SENTENCE_END.finditer(text, begin, max(begin, finish)):
        raw.append((position, match.start()))
        position = match.end()
    raw.append((position, max(position, finish)))
    pieces = [span for span in (_stripped(text, s, e) for s, e in raw)
              if span[0] < span[1] and not is_title(text[span[0]:span[1]], titles)]
    joined: list[tuple[int, int]] = []
    carry: int | None = None
    for start, end in pieces:
        start = start if carry is None else carry
        if sentence_length(text[start:end]) < MIN_SENTENCE_CHARS:
            carry = start
            continue
        joined.append((start, end))
        carry = None
    if carry is not None:
        if joined:
            joined[-1] = (joined[-1][0], pieces[-1][1])
        else:
            joined.append((carry, pieces[-1][1]))
    return [cut for start, end in joined for cut in (
        _line_cuts(text, start, end) if end - start > MAX_SENTENCE_CHARS else [(start, end)])]


@dataclass(frozen=True)
class QuoteTables:
    """The table rows and header rows of one cited quote, as spans of the quote, in order
    (:func:`~rag_pipeline.core.ingest.tables.row_spans`, ``header_spans``), and the spans its
    format says answer nothing (:meth:`~rag_pipeline.core.ingest.formats.base.DocumentFormat.
    not_answers`: a mail's header block), sentences of none of them."""

    rows: Sequence[tuple[int, int]] = ()
    headers: Sequence[tuple[int, int]] = ()
    not_answers: Sequence[tuple[int, int]] = ()


@dataclass(frozen=True)
class _Candidate:
    citation: int
    start: int
    end: int
    text: str
    embedded: str
    terms: str
    """What its term share is counted in: the sentence, a table row with its header row."""
    context: str
    """The record it belongs to: its table row, else its paragraph (its quote's lines between
    blank lines)."""
    row: bool = False
    """A table row: a record of its own, never read with its neighbours."""
    section: str = ""
    """The title of its chunk's section."""
    columns: str = ""
    """A table row's header row, when the row does not name its cells."""


def _candidates(citations: Sequence[Citation], headers: Sequence[str],
                tables: Sequence[QuoteTables]) -> list[_Candidate]:
    """Every sentence of every cited quote (a quote cited twice counted once), but a heading
    (a line that is the document's title or the chunk's section title, or prose that reads as a
    heading: :func:`heading_like`) and a question: they answer nothing. A table row's terms are
    counted with its header row's (the quote's own, or the one above it, ``table_header``): its
    values are named there ("deductible")."""
    seen: set[tuple[str, int, int]] = set()
    out = []
    for citation, header, table in zip(citations, headers, tables, strict=True):
        titles = {" ".join(t.split()) for t in (citation.document_name, citation.section) if t}
        rows = {_stripped(citation.quote, s, e) for s, e in table.rows}
        for start, end in sentence_spans(citation.quote, table.rows,
                                         [*table.headers, *table.not_answers], titles):
            key = (citation.document_id, citation.start + start, citation.start + end)
            if key in seen:
                continue
            seen.add(key)
            text = citation.quote[start:end]
            is_row = (start, end) in rows
            if (is_title(text, titles) or ((heading_like(text) or underlined(text)) and not is_row)
                    or asks(text)):
                continue
            columns = _header_of_row(citation, table, start) if is_row else ""
            # A row is embedded under its header row, as the chunks of a table's later rows
            # are (their context header holds it): a row quoted under it read closer alone.
            named = f"{columns}\n" if columns and columns not in header else ""
            # Prose is counted with its section's title, as a row with its header row: the
            # answer to "what was the root cause" is under "Root cause", in other words.
            section = citation.section if citation.section != citation.document_name else ""
            terms = f"{columns}\n{text}" if columns else f"{section}\n{text}" if section else text
            out.append(_Candidate(citation.index, key[1], key[2], text, f"{header}{named}{text}",
                                  terms,
                                  text if is_row else _paragraph(citation.quote, start, end),
                                  is_row, citation.section, columns))
    return out


_BLANK_LINE = re.compile(r"\r?\n[ \t\r]*\n")


def _paragraph(quote: str, start: int, end: int) -> str:
    """The lines of ``quote`` between the blank lines around ``start:end``."""
    before = [m.end() for m in _BLANK_LINE.finditer(quote, 0, start)]
    after = _BLANK_LINE.search(quote, end)
    return quote[before[-1] if before else 0:after.start() if after else len(quote)]


def _header_of_row(citation: Citation, table: QuoteTables, start: int) -> str:
    """The header row over the row starting at ``start`` of the quote: the last header row of
    the quote before it, else the one above the quote."""
    above = [citation.quote[s:e] for s, e in table.headers if e <= start]
    return above[-1] if above else citation.table_header


_MARK = r"(?:[A-HJ-Z]|\d{1,3})(?![\w-]|\.\d)"
"""A label's mark: one capital letter but ``I`` (the pronoun: "Can I ..."), or a number of up
to three digits (not a version's ``3.12``)."""
_MARKS = rf"{_MARK}(?:\s*(?:/|,|&|and|or)\s*{_MARK})*"
_LABEL = re.compile(rf"(?<![\w-])([A-Za-z][a-z]+) ({_MARKS}|[a-hj-z](?=\s*(?:[?.!,;:)]|$)))")
"""A label in a question: a word, one space, a mark, maybe more joined (``Tier A``, ``Tier A
and B``, ``Tier A/B``, ``phase 2``), or one lower-case letter ending the clause (``zone f?``;
not ``plan a trip``)."""


def question_labels(question: str) -> dict[str, set[str]]:
    """The labels ``question`` names, as the marks named after each word, the word lower-cased
    and a letter upper-cased (``{"tier": {"A", "B"}}`` for "Compare the Tier A and B rates"); a
    stopword names none ("is 2", "in 30")."""
    labels: dict[str, set[str]] = {}
    for word, marks in _LABEL.findall(question):
        if word.lower() not in ENGLISH_STOPWORDS:
            labels.setdefault(word.lower(), set()).update(_marks_in(marks) or {marks.upper()})
    return labels


def _named_marks(sentence: str, word: str) -> set[str]:
    """The marks ``sentence`` names after ``word`` as a label (``Tier C``, ``tier C``,
    ``Phase 3``; not ``plan a move``)."""
    return {mark for marks in re.findall(rf"(?<![\w-])(?i:{re.escape(word)})\s+({_MARKS})", sentence)
            for mark in _marks_in(marks)}


def _marks_in(marks: str) -> set[str]:
    """The capital letters and numbers of a run of marks (``A and B``, ``1/2``)."""
    return set(re.findall(r"\b[A-HJ-Z]\b|\d+", marks))


_ITEM_MARK = re.compile(r"\s*(?:(\d{1,3})(?=[.):]?\s)|([A-HJ-Z])(?=[.):]\s))")
"""A list item's own mark, leading its text (``3 The rollback failed.``, ``B) Retry.``)."""


def _item_marks(candidate: _Candidate, word: str) -> set[str]:
    """The mark leading ``candidate`` when its section names ``word`` (plural too): an item of
    a list of them (``3 The rollback itself failed.`` under EXIT STATUS names ``status 3``)."""
    item = _ITEM_MARK.match(candidate.text)
    section = set(re.findall(r"\w+", candidate.section.lower()))
    if item is None or not section & {word, f"{word}s", f"{word}es"}:
        return set()
    return {item.group(1) or item.group(2)}


def _of_the_named_labels(candidates: list[_Candidate], question: str) -> list[_Candidate]:
    """``candidates`` without those naming only other marks of a label the question names,
    when one names the question's own (:data:`_LABEL`; an item of a list under a section named
    by its word names the mark leading it, :func:`_item_marks`)."""
    for word, marks in question_labels(question).items():
        candidates = _about_the_named(
            candidates, [_named_marks(c.text, word) | _item_marks(c, word) for c in candidates],
            marks)
    return candidates


def _about_the_named(candidates: list[_Candidate], about: Sequence[set[str]],
                     named: set[str]) -> list[_Candidate]:
    """``candidates`` (each about the things in ``about``) without those about others only,
    when one is about one of ``named``."""
    if not any(found & named for found in about):
        return candidates
    return [c for c, found in zip(candidates, about, strict=True) if not found or found & named]


def _of_the_named_codes(candidates: list[_Candidate], question: str) -> list[_Candidate]:
    """``candidates`` without those whose paragraph or row holds none of the codes the question
    names but a look-alike of one (another of them is no look-alike), when one's holds a code
    the question names; and without the table rows whose first cell is no code it names, when
    one's is."""
    named = question_identifiers(question)
    if not named:
        return candidates
    holding = [any(holds_code(c.context, code) for code in named) for c in candidates]
    if not any(holding):
        return candidates
    kept = [c for c, held in zip(candidates, holding, strict=True)
            if held or not holds_look_alike(c.context, named)]
    # A row keyed by a named code is that record's own (the invoice register's row of
    # INV-2026-0042): a row of another table naming the code in a later cell (a ticket about
    # the invoice) is cited beside it, not quoted as its answer.
    keyed = [c.row and any(holds_code(_first_cell(c.text), code) for code in named) for c in kept]
    if not any(keyed):
        return kept
    return [c for c, own in zip(kept, keyed, strict=True) if own or not c.row]


def _first_cell(row: str) -> str:
    """A table row's first cell as its candidate reads it (``invoice_id: INV-2026-0042`` of a
    CSV row, ``INV-2026-0042`` of another table's)."""
    return row.split(" | ", 1)[0]


_NAME = re.compile(r"(?<![\w-])[A-Z][A-Z0-9_]{2,}(?![\w-])")
"""A name in capitals, of three characters or more (``HISTSIZE``, ``SQLITE_MAX_COLUMN``)."""


def _of_the_named_terms(candidates: list[_Candidate], question: str) -> list[_Candidate]:
    """``candidates`` without those about another option or name in capitals than the question
    names (:data:`OPTION`, :data:`_NAME`), when one is about the question's. A section titled
    by one is about it alone: when a cited section is titled by the name the question names, its
    siblings titled by other names are not about it (``HISTFILESIZE``'s "The shell sets the
    default value to the value of HISTSIZE" is not about ``HISTSIZE``, whose own section says
    500). Under any other title a paragraph or row is about the options it holds (``--create``'s
    exit code is not about ``--one-file-system``); a name in capitals in prose (``POSIX``,
    ``NOTE``) says too little for that."""
    for shape, in_prose in ((OPTION, True), (_NAME, False)):
        named = {term for term in shape.findall(question) if term.lower() not in ENGLISH_STOPWORDS}
        if not named:
            continue
        candidates = _about_the_named(
            candidates, [_terms_about(c, shape, in_prose) for c in candidates], named)
    return candidates


def _terms_about(candidate: _Candidate, shape: re.Pattern[str], in_prose: bool) -> set[str]:
    """The terms of ``shape`` ``candidate`` is about: its section's title when that is one
    term of it, else (``in_prose``) those its paragraph or row holds, or an entry's own: a
    manual's entry (``-S, --no-keep-going, --stop`` over "Cancel the effect of the -k
    option.") is about the terms of its first line when that starts with one."""
    title = candidate.section.strip()
    if shape.fullmatch(title):
        return {title}
    if not in_prose:
        return set()
    first_line = candidate.context.strip().split("\n", 1)[0]
    if shape.match(first_line):
        return set(shape.findall(first_line))
    return set(shape.findall(candidate.context))


_DATE = re.compile(r"(?<![\d-])\d{4}-\d{2}-\d{2}(?![\d-])")
"""A date as ISO 8601 writes it (``2026-03-02``): a spreadsheet's cells show dates so."""


def _of_the_named_dates(candidates: list[_Candidate], question: str) -> list[_Candidate]:
    """``candidates`` without those whose paragraph or row holds another date but none the
    question names (the rota's other weeks), when one's holds a date the question names."""
    named = set(_DATE.findall(question))
    if not named:
        return candidates
    return _about_the_named(candidates, [set(_DATE.findall(c.context)) for c in candidates],
                            named)


def asks(sentence: str) -> bool:
    """Whether ``sentence`` is only a question (its last mark, closing quotes and brackets
    aside, is ``?``, and no sentence ends before it): a question in a source, a mail's or a
    FAQ's, holds the question's words, never its answer. A statement with a short question
    joined to it (``... renewed by an admin. Any questions?``) is no question; a list's
    number before it (``8. Why does grep ...?``, a FAQ's) ends no sentence."""
    text = _LIST_NUMBER.sub("", sentence.rstrip().rstrip("\"')]\u2019\u201d"), count=1)
    return text.endswith("?") and SENTENCE_END.search(text[:-1]) is None


_LIST_NUMBER = re.compile(r"^\s*(?:\d{1,3}|[A-Za-z])[.)]\s+")
"""A numbered or lettered list item's mark (``8. ``, ``b) ``)."""


def term_share(question_terms: set[str], sentence: str, analyzer: Analyzer) -> float:
    """The share of the question's distinct terms that occur in ``sentence`` (0 without terms)."""
    if not question_terms:
        return 0.0
    return len(question_terms & set(analyze(sentence, analyzer))) / len(question_terms)


def choose_sentences(scores: Sequence[float], settings: QuoteSettings,
                     texts: Sequence[str] | None = None,
                     tiebreaks: Sequence[float] | None = None) -> list[int]:
    """Indexes of the chosen sentences, best first: the best, then up to ``max_sentences - 1``
    more whose score is at least the best's minus ``margin`` (ties go to the higher of
    ``tiebreaks``, then keep the earlier sentence).
    With ``texts``, a sentence saying word for word what a chosen one says (a paragraph two
    documents share) is passed over: the answer would say it twice."""
    if not scores:
        return []
    order = sorted(range(len(scores)), key=lambda i: (
        -scores[i], -tiebreaks[i] if tiebreaks is not None else 0.0, i))
    best = scores[order[0]]
    chosen: list[int] = []
    said: set[str] = set()
    for i in order:
        if len(chosen) == settings.max_sentences or scores[i] < best - settings.margin:
            break
        words = " ".join(texts[i].split()) if texts is not None else str(i)
        if words not in said:
            said.add(words)
            chosen.append(i)
    return chosen


def quoted_answer(question: str, query: np.ndarray, citations: Sequence[Citation],
                  headers: Sequence[str], embed: Callable[[list[str]], np.ndarray],
                  settings: QuoteSettings | None = None,
                  tables: Sequence[QuoteTables] | None = None,
                  asked: str | None = None) -> list[QuotedSentence]:
    """The sentences of the cited quotes that best answer ``question``, best first.

    Args:
        question: The question as asked.
        query: The question's unit vector (as retrieval embedded it).
        citations: The answer's sources; none (a refusal) quotes nothing.
        headers: Per citation, what its chunk's embedded text puts before its content.
        embed: Unit vectors of a list of texts (the model that embedded the index).
        settings: How sentences are chosen.
        tables: Per citation, its quote's table rows (a sentence each) and header rows (none);
            None: no tables.
        asked: What the sentences are scored against when not ``question`` itself (``query``
            is then its vector): the question without the codes every quoted source holds.
    """
    settings = settings or QuoteSettings()
    candidates = _of_the_named_terms(_of_the_named_dates(_of_the_named_codes(_of_the_named_labels(
        _candidates(citations, headers, tables or [QuoteTables()] * len(citations)), question),
        question), question), question)
    if not candidates:
        return []
    similarity, alone = _similarities(candidates, query, embed, settings.in_context)
    terms = set(analyze(asked or question, settings.analyzer))
    shares = [settings.term_weight * term_share(terms, c.terms, settings.analyzer) for c in candidates]
    scores = [float(similarity[i]) + share for i, share in enumerate(shares)]
    # Two sentences of one pair share its score: the one closer alone comes first (a
    # neighbour of the answer never leads it only by coming earlier).
    alone_scores = [float(alone[i]) + share for i, share in enumerate(shares)]
    return [QuotedSentence(candidates[i].text, candidates[i].citation, candidates[i].start,
                           candidates[i].end, round(scores[i], 6), columns=candidates[i].columns)
            for i in choose_sentences(scores, settings, [c.text for c in candidates], alone_scores)]


def _similarities(candidates: Sequence[_Candidate], query: np.ndarray,
                  embed: Callable[[list[str]], np.ndarray], in_context: bool,
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Each candidate's cosine similarity to the unit vector ``query``, and its own alone;
    ``in_context``: the first is the best of its own and those of the pairs it makes with its
    neighbours among the candidates of the same quote (the earlier one's embedded text, then
    the later one's words; a table row pairs with none), all embedded in one call."""
    import numpy as np

    pairs = [i for i in range(1, len(candidates)) if in_context
             and candidates[i].citation == candidates[i - 1].citation
             and not candidates[i].row and not candidates[i - 1].row]
    texts = [c.embedded for c in candidates]
    texts += [f"{candidates[i - 1].embedded} {candidates[i].text}" for i in pairs]
    similarity = np.asarray(embed(texts), np.float32) @ np.asarray(query, np.float32).reshape(-1)
    alone = similarity[:len(candidates)]
    best = alone.copy()
    for pair, i in zip(similarity[len(candidates):], pairs, strict=True):
        best[i - 1] = max(best[i - 1], pair)
        best[i] = max(best[i], pair)
    return best, alone


def check_quoted(quoted: Sequence[QuotedSentence], citations: Sequence[Citation],
                 canonical: Mapping[str, str]) -> None:
    """Proves every quoted sentence is its document's ``canonical_text[start:end]``.

    Raises:
        ValueError: A sentence cites no source, or its text is not that slice.
    """
    by_number = {c.index: c for c in citations}
    for sentence in quoted:
        citation = by_number.get(sentence.citation)
        if citation is None:
            raise ValueError(f"quoted sentence cites [{sentence.citation}], which is no source")
        text = canonical.get(citation.document_id)
        if text is None or text[sentence.start:sentence.end] != sentence.text:
            raise ValueError(f"quoted sentence [{sentence.citation}] {sentence.start}:{sentence.end} "
                             f"is not the canonical text of {citation.document_id!r}")
