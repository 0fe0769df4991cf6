"""How often the quoted answer holds the gold needle, on the bundled gold set (questions and tickets).

Run after ``make index``: ``.venv/bin/python -m rag_pipeline.benchmarks.quoted_answer
[--data-dir DIR] [--gold FILE]``. Each gold line is asked twice (its question and its ticket) with
the served defaults (four sources at most); per choice of :class:`QuoteSettings` it prints:

- ``R@4``: the share of queries whose sources hold the needle (retrieval's ceiling);
- ``contains``: the share whose quoted sentences hold the whole needle;
- ``overlaps``: the share where a quoted sentence overlaps the needle;
- ``contains | R@4``: ``contains`` among the queries whose sources hold the needle.

The first choice is the served default; the quoting time printed is its (nothing cached yet).

Every quoted sentence is checked to be its document's ``canonical_text[from:to]``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from pathlib import Path

import numpy as np

from rag_pipeline.benchmarks import go_offline
from rag_pipeline.core.answer.ask import AskSettings, ask
from rag_pipeline.core.answer.quoted import QuoteSettings, check_quoted
from rag_pipeline.core.chunking.strategies import DEFAULT_STRATEGY
from rag_pipeline.core.config.gold_file import load_gold
from rag_pipeline.core.config.keys import declared_models
from rag_pipeline.core.embedding.embedder import load_embedder
from rag_pipeline.core.evaluation.gold import QueryStyle, collapse
from rag_pipeline.core.index.store import load_partition, served_generation
from rag_pipeline.core.storage.table_names import DOCUMENTS
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.project_paths import DEFAULT_DATA_DIR, DEFAULT_EVAL_DIR

VARIANTS = {
    "default: + 0.25 terms, up to 3 within 0.1, in context": QuoteSettings(),
    "embedding alone, 1 sentence": QuoteSettings(max_sentences=1, term_weight=0.0, in_context=False),
    "embedding alone, up to 3 within 0.03": QuoteSettings(term_weight=0.0, margin=0.03,
                                                          in_context=False),
    "embedding + 0.25 terms, 1 sentence": QuoteSettings(max_sentences=1, in_context=False),
    "embedding + 0.25 terms, up to 3 within 0.03": QuoteSettings(margin=0.03, in_context=False),
    "embedding + 0.5 terms, up to 3 within 0.03": QuoteSettings(term_weight=0.5, margin=0.03,
                                                                in_context=False),
    "terms alone (x100), up to 3 within 0.03": QuoteSettings(term_weight=100.0, margin=0.03,
                                                             in_context=False),
    "embedding + 0.25 terms, up to 3 within 0.1": QuoteSettings(in_context=False),
    "embedding + 0.5 terms, up to 3 within 0.1": QuoteSettings(term_weight=0.5, in_context=False),
    "embedding + 0.25 terms, always 3": QuoteSettings(margin=10.0, in_context=False),
    "in context, + 0.25 terms, 1 sentence": QuoteSettings(max_sentences=1),
    "in context, + 0.25 terms, always 3": QuoteSettings(margin=10.0),
}
"""Each sentence scored alone (``in_context=False``) but where the name says "in context"
(:class:`QuoteSettings`). The first is the served default: its time is what quoting costs."""


def needle_span(text: str, needle: str) -> tuple[int, int] | None:
    """Where the needle is in ``text``, white space between its words matched loosely."""
    pattern = r"\s+".join(re.escape(word) for word in needle.split())
    match = re.search(pattern, text)
    return None if match is None else (match.start(), match.end())


class _Cached:
    """The model, with every text's vector kept (the variants embed the same sentences)."""

    def __init__(self, embedder) -> None:
        self.embedder = embedder
        self.spec = embedder.spec
        self._vectors: dict[str, np.ndarray] = {}
        self._questions: dict[str, np.ndarray] = {}

    def embed_query(self, question: str) -> np.ndarray:
        if question not in self._questions:
            self._questions[question] = self.embedder.embed_query(question)
        return self._questions[question]

    def embed(self, texts, **kwargs) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self.embedder.embed(missing), strict=True))
        return np.stack([self._vectors[t] for t in texts])


def _scored(answer, canonical, needle: str) -> tuple[bool, bool]:
    """(the quoted sentences hold the whole needle, one of them overlaps it); sentences of one
    document separated only by white space count as one stretch."""
    by_number = {c.index: c for c in answer.citations}
    contains = overlaps = False
    for document in {by_number[q.citation].document_id for q in answer.quoted}:
        span = needle_span(canonical[document], needle)
        if span is None:
            continue
        spans = sorted((q.start, q.end) for q in answer.quoted
                       if by_number[q.citation].document_id == document)
        overlaps |= any(a < span[1] and b > span[0] for a, b in spans)
        merged: list[list[int]] = []
        for a, b in spans:
            if merged and not canonical[document][merged[-1][1]:a].strip():
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        contains |= any(a <= span[0] and span[1] <= b for a, b in merged)
    return contains, overlaps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--gold", type=Path, default=DEFAULT_EVAL_DIR / "gold.jsonl")
    parser.add_argument("--start", type=int, default=0, help="Skip the first N queries.")
    parser.add_argument("--limit", type=int, default=None, help="At most N queries.")
    parser.add_argument("--only", default="", help="Only the choices whose name holds this text.")
    args = parser.parse_args()
    go_offline()
    spec = declared_models()[0]
    chunker = DEFAULT_STRATEGY.value
    index = load_partition(args.data_dir, chunker, spec.key)
    warehouse = Warehouse(args.data_dir)
    documents = warehouse.read_file(served_generation(warehouse, chunker, spec.key).files[DOCUMENTS],
                                    columns=["document_id", "canonical_text"])
    canonical = dict(zip(documents.column("document_id").to_pylist(),
                         documents.column("canonical_text").to_pylist(), strict=True))
    embedder = _Cached(load_embedder(spec))
    queries = [(line, line.question if style is QueryStyle.QUESTION else line.ticket)
               for line in load_gold(args.gold) for style in QueryStyle]
    queries = queries[args.start:None if args.limit is None else args.start + args.limit]
    variants = {name: quote for name, quote in VARIANTS.items() if args.only in name}
    counts = {name: {"contains": 0, "overlaps": 0, "contains_at_r4": 0} for name in variants}
    in_sources = answered = 0
    quote_ms: list[float] = []
    started = time.perf_counter()
    for done, (line, text) in enumerate(queries):
        if done and done % 40 == 0:
            _report(f"after {done} of {len(queries)} queries", done, answered, in_sources, quote_ms,
                    counts, time.perf_counter() - started)
        needle = collapse(line.needle)
        for number, (name, quote) in enumerate(variants.items()):
            answer = ask(text, index, embedder, AskSettings(quote=quote))
            if not answer.answered:
                break
            check_quoted(answer.quoted, answer.citations, canonical)
            hit = any(needle in collapse(c.quote) for c in answer.citations)
            if number == 0:  # the sentences are not cached yet: the served cost
                answered += 1
                in_sources += hit
                quote_ms.append(answer.timings["quote"] * 1000)
            contains, overlaps = _scored(answer, canonical, line.needle)
            counts[name]["contains"] += contains
            counts[name]["overlaps"] += overlaps
            counts[name]["contains_at_r4"] += contains and hit
    _report(f"partition {chunker}|{spec.key}: {len(index)} chunks; gold {args.gold}", len(queries),
            answered, in_sources, quote_ms, counts, time.perf_counter() - started)


def _report(title: str, total: int, answered: int, in_sources: int, quote_ms: list[float],
            counts: dict[str, dict[str, int]], seconds: float) -> None:
    print(f"{title} ({total} queries: questions and tickets), {answered} answered, {seconds:.0f} s")
    print(f"quoting adds {statistics.median(quote_ms or [0.0]):.1f} ms a question (median; embedding "
          "the sources' sentences)")
    print(f"R@4 (the needle in the cited sources): {in_sources}/{total} = {in_sources / total:.3f}")
    print(f"{'choice':44s} {'contains':>9s} {'overlaps':>9s} {'contains | R@4':>15s}")
    for name, c in counts.items():
        print(f"{name:44s} {c['contains'] / total:9.3f} {c['overlaps'] / total:9.3f} "
              f"{c['contains_at_r4'] / max(in_sources, 1):15.3f}", flush=True)

if __name__ == "__main__":
    main()
