"""Ask: retrieve, gate, cite, and only then (optionally) generate.

The gate decides; the model, when one is configured, only writes prose with ``[n]`` markers.
A refusal never calls a model.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING
from urllib.parse import quote

from rag_pipeline.core.answer.answer import Answer
from rag_pipeline.core.answer.citations import (
    Citation,
    build_prompt,
    document_url,
    locator_label,
)
from rag_pipeline.core.answer.gate import DEFAULT_CUT, MAX_SOURCES, gate_hits, refusal_line
from rag_pipeline.core.answer.generation import (
    GeneratorSettings,
    check_answer,
    generate,
    render_answer,
)
from rag_pipeline.core.answer.question import check_question
from rag_pipeline.core.answer.quoted import QuoteSettings, QuoteTables, quoted_answer
from rag_pipeline.core.config.validation import check_threshold
from rag_pipeline.core.embedding.models import TextEmbedder
from rag_pipeline.core.index.access import Readable, readable_rows
from rag_pipeline.core.index.bm25 import Bm25List
from rag_pipeline.core.ingest import format_named
from rag_pipeline.core.ingest.tables import header_spans, row_spans
from rag_pipeline.core.ingest.text_fragment import text_fragment
from rag_pipeline.core.retrieval.identifiers import without_identifiers
from rag_pipeline.core.retrieval.rerank import Reranker
from rag_pipeline.core.retrieval.retriever import (
    Hit,
    RetrievalSettings,
    Retriever,
    bm25_top,
    embed_question,
    retrieve,
)
from rag_pipeline.core.retrieval.sentences import chunk_headers

if TYPE_CHECKING:
    from rag_pipeline.core.index.store import DocumentInfo, PartitionIndex

@dataclass(frozen=True)
class AskSettings:
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    cut: float = DEFAULT_CUT
    max_sources: int = MAX_SOURCES
    base_url: str | None = None
    generator: GeneratorSettings | None = None
    quote: QuoteSettings | None = field(default_factory=QuoteSettings)
    """How the quoted answer is chosen; None quotes nothing (no sentence is embedded)."""

    def __post_init__(self) -> None:
        check_threshold(self.cut, "cut")
        if self.max_sources < 1:
            raise ValueError(f"max_sources must be at least 1, got {self.max_sources}")


def _fragment_of_row(index: PartitionIndex, row: int) -> str:
    """The format's fragment of the chunk; a chunk of table rows adds them
    (``#page=3&rows=14-27``, ``#char=120,610&rows=5-19``)."""
    return _fragment_of_span(index.documents[index.document_ids[row]], int(index.starts[row]),
                             int(index.ends[row]))


def _fragment_of_span(doc: DocumentInfo, start: int, end: int) -> str:
    """The format's fragment of ``canonical_text[start:end]`` of ``doc``, table rows added
    unless the fragment names them itself."""
    return format_named(doc.format).cited_fragment(doc.anchors, doc.tables, start, end)


QUOTE_ONLY_MIN_WORDS = 6
"""A text fragment built from the quote alone (the index holds chunks, not whole documents)
starts with this many words, so that it is less likely to match an earlier sentence."""


def _url_fragment(index: PartitionIndex, row: int, base_url: str | None, fragment: str) -> str:
    """What the citation URL ends with: a text fragment (``#:~:text=``) for a page under
    ``base_url`` that a browser shows as text, else the format's own fragment."""
    doc = index.documents[index.document_ids[row]]
    if not base_url or not format_named(doc.format).links_by_text:
        return fragment
    quote = index.contents[row]
    return text_fragment(quote, 0, len(quote), min_words=QUOTE_ONLY_MIN_WORDS) or fragment


def _shown(shown_quote: Callable[[str], str], text: str) -> str:
    """What a reader sees of ``text``, or ``""`` when it is ``text`` itself."""
    shown = shown_quote(text)
    return "" if shown == text else shown


def citations_for(index: PartitionIndex, hits: list[Hit], base_url: str | None) -> list[Citation]:
    """Numbered citations for the kept hits; ``locations`` names every place the quote occurs
    (the document id percent-encoded, as in a URL, then the fragment).
    ``fragment`` is the format's locator; with a ``base_url``, the URL of an HTML, Markdown or
    text page carries a W3C text fragment instead, which browsers open at the quote."""
    citations = []
    for number, hit in enumerate(hits, start=1):
        doc = index.documents[index.document_ids[hit.row]]
        fragment = _fragment_of_row(index, hit.row)
        citations.append(Citation(
            index=number, document_id=doc.document_id, document_name=doc.title,
            locator_label=locator_label(doc.title, index.sections[hit.row]), fragment=fragment,
            start=int(index.starts[hit.row]), end=int(index.ends[hit.row]),
            quote=index.contents[hit.row], cosine_distance=round(hit.cosine_distance, 6),
            url=document_url(doc.path, doc.document_id, base_url,
                             _url_fragment(index, hit.row, base_url, fragment)),
            locations=tuple(f"{quote(index.document_ids[r])}{_fragment_of_row(index, r)}"
                            for r in hit.locations),
            shown_quote=_shown(format_named(doc.format).shown_quote, index.contents[hit.row]),
            section=index.sections[hit.row], identifier=hit.identifier,
            left_out=doc.left_out_at(int(index.starts[hit.row]), int(index.ends[hit.row])),
            table_header=format_named(doc.format).header_above(
                doc.tables, int(index.starts[hit.row]), int(index.ends[hit.row]))))
    return citations


@cache
def _side_threads() -> ThreadPoolExecutor:
    """Threads that rank a question's BM25 list while the model embeds it (one per question at
    once, as many as a serving process answers side by side)."""
    return ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1), thread_name_prefix="bm25")


def stop_side_threads() -> None:
    """Lets the side threads end once their lists are ranked (a service stopping): an idle one
    would wait for work until the interpreter ends. A later question starts new ones."""
    if _side_threads.cache_info().currsize:
        pool = _side_threads()
        _side_threads.cache_clear()
        pool.shutdown(wait=False)


def _beside(index: PartitionIndex, question: str, settings: RetrievalSettings,
            readable: Readable | None = None) -> Future[tuple[Bm25List, float]] | None:
    """The question's BM25 list (and its seconds), started on a side thread: it needs only the
    text, so it runs while the question is embedded (measured at 1.3 M chunks: 4.4 ms of BM25
    beside 6.1 ms of embedding) and ``retrieve`` is handed the result. None when the retriever
    reads no BM25 or asks for feedback (RM3 and Rocchio rank again from the fused list)."""
    if settings.retriever is Retriever.DENSE or settings.feedback:
        return None

    def ranked() -> tuple[Bm25List, float]:
        started = time.perf_counter()
        return bm25_top(index, question, settings, readable), time.perf_counter() - started

    return _side_threads().submit(ranked)


def ask(question: str, index: PartitionIndex, embedder: TextEmbedder,
        settings: AskSettings | None = None, reranker: Reranker | None = None,
        groups: frozenset[str] | None = None) -> Answer:
    """Answers from the partition or refuses; ``timings`` holds seconds per stage.

    ``groups``: the asker's groups; on a labelled partition (``[access]`` declared) only the
    chunks they may read are ranked, gated and cited (None: everything)."""
    settings = settings or AskSettings()
    question = check_question(question)
    started = time.perf_counter()
    timings: dict[str, float] = {}
    readable = readable_rows(index, groups)
    lexical = _beside(index, question, settings.retrieval, readable)
    t = time.perf_counter()
    query = embed_question(embedder, question)
    timings["embed_question"] = time.perf_counter() - t
    bm25 = None
    if lexical is not None:
        bm25, timings["bm25"] = lexical.result()
    ranking = retrieve(index, query, question, settings.retrieval, bm25=bm25, readable=readable)
    timings.update(ranking.timings)
    hits = ranking.hits
    if reranker is not None:
        t = time.perf_counter()
        order = reranker.rerank(question, [(str(i), index.texts[h.row]) for i, h in enumerate(hits)])
        hits = [hits[int(i)] for i, _ in order]
        timings["rerank"] = time.perf_counter() - t
    decision = gate_hits(hits, settings.cut, settings.max_sources)
    partition = f"{index.chunker}|{index.model_key}"
    if not decision.answered:
        timings["total"] = time.perf_counter() - started
        return Answer(question, False, refusal_line(question, decision), settings.cut, partition,
                      [], None, decision.closest_distance, reranker is not None, timings=timings,
                      generation=index.generation, unheld=decision.unheld)
    kept = [hits[i] for i in decision.kept]
    citations = citations_for(index, kept, settings.base_url)
    prompt = build_prompt(question, citations)
    answer = Answer(question, True, None, settings.cut, partition, citations, prompt,
                    decision.closest_distance, reranker is not None, timings=timings,
                    generation=index.generation, unheld=decision.unheld)
    if settings.quote is not None:
        t = time.perf_counter()
        headers = chunk_headers([index.texts[h.row] for h in kept], [index.contents[h.row] for h in kept])
        documents = [index.documents[c.document_id] for c in citations]
        tables = [QuoteTables(
            [(s - c.start, e - c.start) for s, e in row_spans(d.tables, d.anchors, c.start, c.end)],
            [(s - c.start, e - c.start) for s, e in header_spans(d.tables, c.start, c.end)],
            format_named(d.format).not_answers(c.quote))
            for c, d in zip(citations, documents, strict=True)]
        # A source holding a code the question names is what it asks about: the others are
        # cited beside it, not quoted as the answer. Each source quoted holds the code, so its
        # sentences are scored by what the question asks about it (the question without its
        # codes: a code's embedding says little, and draws the lines naming it, not those
        # answering).
        quoting = [i for i, c in enumerate(citations) if c.identifier] or range(len(citations))
        asked = without_identifiers(question) if any(c.identifier for c in citations) else question
        asked = asked if asked.strip() else question
        vector = query.vector if asked == question else embed_question(embedder, asked).vector
        answer.quoted = [
            replace(q, fragment=_fragment_of_span(documents[q.citation - 1], q.start, q.end),
                    shown=_shown(format_named(documents[q.citation - 1].format).shown_quote, q.text))
            for q in quoted_answer(question, vector, [citations[i] for i in quoting],
                                   [headers[i] for i in quoting], embedder.embed,
                                   settings.quote, [tables[i] for i in quoting], asked=asked)]
        timings["quote"] = time.perf_counter() - t
    if settings.generator is not None:
        t = time.perf_counter()
        answer.generated = check_answer(generate(prompt, settings.generator), len(citations))
        answer.rendered_answer = render_answer(answer.generated, citations)
        timings["generate"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - started
    return answer
