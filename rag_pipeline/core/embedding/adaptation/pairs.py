"""The training pairs of an adapted model, made from a corpus's chunks alone (never from gold
questions): ``header`` and ``neighbour`` pairs, a seeded sample, their digest."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from rag_pipeline.core.chunking.strategies import Chunk, ChunkingStrategy, chunk_document
from rag_pipeline.core.embedding.adaptation.recipe import AdaptRecipe

PAIRS_VERSION = "rag_pipeline adaptation pairs v1"


class PairKind(StrEnum):
    HEADER = "header"
    NEIGHBOUR = "neighbour"


@dataclass(frozen=True)
class Pair:
    """One training pair: ``anchor`` should retrieve ``positive`` (the rest of the batch are
    its negatives)."""

    anchor: str
    positive: str
    kind: PairKind
    document_id: str


@dataclass(frozen=True)
class CorpusDocument:
    """A document as the pairs see it: its id, title and canonical text."""

    document_id: str
    title: str
    canonical_text: str


def corpus_chunks(documents: Sequence[CorpusDocument], chunker: ChunkingStrategy) -> list[Chunk]:
    """Every document cut by ``chunker``, in document id order."""
    out: list[Chunk] = []
    for doc in sorted(documents, key=lambda d: d.document_id):
        out.extend(chunk_document(doc.document_id, doc.title, doc.canonical_text, chunker))
    return out


def make_pairs(chunks: Sequence[Chunk], exclude: Iterable[str] = ()) -> list[Pair]:
    """The ``header`` and ``neighbour`` pairs of the chunks (in reading order per document),
    none from a document in ``exclude``. A chunk whose content has fewer than 8 words makes
    no pair (a lone code line or a heading's remains teach nothing)."""
    excluded = set(exclude)
    pairs: list[Pair] = []
    previous: Chunk | None = None
    for chunk in chunks:
        if chunk.document_id in excluded:
            continue
        content = " ".join(chunk.content.split())
        if len(content.split()) < 8:
            previous = None
            continue
        header = chunk.header or chunk.section
        pairs.append(Pair(header, content, PairKind.HEADER, chunk.document_id))
        if (previous is not None and previous.document_id == chunk.document_id
                and previous.section == chunk.section):
            pairs.append(Pair(" ".join(previous.content.split()), content, PairKind.NEIGHBOUR,
                              chunk.document_id))
        previous = chunk
    return pairs


def sample_pairs(pairs: Sequence[Pair], limit: int, seed: int) -> list[Pair]:
    """At most ``limit`` pairs: all of them, or a seeded sample kept in corpus order."""
    if len(pairs) <= limit:
        return list(pairs)
    chosen = sorted(random.Random(seed).sample(range(len(pairs)), limit))
    return [pairs[i] for i in chosen]


def pairs_sha256(pairs: Iterable[Pair]) -> str:
    """sha256 of the pairs in order (version line, then kind, document, anchor, positive)."""
    digest = hashlib.sha256(PAIRS_VERSION.encode())
    for pair in pairs:
        for value in (pair.kind.value, pair.document_id, pair.anchor, pair.positive):
            digest.update(b"\x00" + value.encode("utf-8"))
        digest.update(b"\x01")
    return digest.hexdigest()


def training_pairs(documents: Sequence[CorpusDocument], recipe: AdaptRecipe) -> tuple[list[Pair], int]:
    """The pairs a recipe trains on, and how many the corpus made before the sample."""
    pairs = make_pairs(corpus_chunks(documents, recipe.chunker), recipe.held_out)
    return sample_pairs(pairs, recipe.max_pairs, recipe.seed), len(pairs)


def corpus_documents(corpus: Path | None) -> list[CorpusDocument]:
    """The ok documents of a corpus folder, or (None) of the bundled Python reference as
    CPython ships it (the text ``rag-pipeline index`` exports, read without writing it)."""
    if corpus is None:
        from pydoc_data.topics import topics

        from rag_pipeline.core.ingest import format_named
        from rag_pipeline.core.ingest.corpus_export import topic_to_markdown

        markdown = format_named("markdown")
        out = []
        for name in sorted(topics):
            extracted = markdown.extract(topic_to_markdown(topics[name]).encode("utf-8"), name)
            out.append(CorpusDocument(f"{name}.md", extracted.title, extracted.canonical_text))
        return out
    from rag_pipeline.core.ingest import discover, extract_document

    corpus = Path(corpus)
    if not corpus.is_dir():
        raise FileNotFoundError(f"corpus folder not found: {corpus}")
    records = [extract_document(path, corpus) for path in discover(corpus)]
    return [CorpusDocument(r.document_id, r.title, r.canonical_text) for r in records if r.ok]
