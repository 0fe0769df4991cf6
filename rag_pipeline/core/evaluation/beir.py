"""A BEIR-format dataset (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) as a public benchmark.

Each corpus document is one retrieval unit, embedded as ``(title + " " + text).strip()`` as
MTEB's DRES ``encode_corpus`` does. Queries are read for their ``text`` only: BEIR's
``metadata`` can hold the gold evidence (SciFact's does). Scores: nDCG@10, Recall@100 and
MRR@10 over the judged queries, for dense, BM25 (both analyzers) and their RRF fusion.
"""

from __future__ import annotations

import csv
import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from rag_pipeline.core.embedding.model_key import ModelKey
from rag_pipeline.core.embedding.models import TextEmbedder
from rag_pipeline.core.evaluation.metrics import mrr_at_k_qrels, ndcg_at_k, recall_at_k_qrels
from rag_pipeline.core.index.bm25 import K1, Bm25Scorer, build_bm25_tables
from rag_pipeline.core.index.mapped import ContentRows
from rag_pipeline.core.index.store import PartitionIndex
from rag_pipeline.core.retrieval.dense import cosine_distances, top_k
from rag_pipeline.core.retrieval.fusion import reciprocal_rank_fusion
from rag_pipeline.core.retrieval.retriever import QueryVector, RetrievalSettings, retrieve
from rag_pipeline.core.text.analyzers import Analyzer

DEPTH = 1000


@dataclass(frozen=True)
class BeirDataset:
    name: str
    doc_ids: list[str]
    doc_texts: list[str]
    query_ids: list[str]
    query_texts: list[str]
    qrels: dict[str, dict[str, int]]


def load_beir(folder: Path, split: str = "test") -> BeirDataset:
    """The judged queries of ``split`` and the whole corpus."""
    folder = Path(folder)
    for required in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (folder / required).is_file():
            raise FileNotFoundError(f"{folder} is not a BEIR dataset: {required} is missing")
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / f"{split}.tsv").open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        next(reader)
        for query_id, doc_id, score in reader:
            qrels.setdefault(query_id.strip(), {})[doc_id.strip()] = int(score)
    doc_ids, doc_texts = [], []
    with (folder / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            doc_ids.append(str(row["_id"]))
            doc_texts.append((row.get("title", "") + " " + row.get("text", "")).strip())
    query_ids, query_texts = [], []
    with (folder / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if str(row["_id"]) in qrels:
                query_ids.append(str(row["_id"]))
                query_texts.append(row["text"])
    return BeirDataset(folder.name, doc_ids, doc_texts, query_ids, query_texts, qrels)


@dataclass(frozen=True)
class BeirRow:
    retriever: str
    analyzer: str | None
    k1: float | None
    ndcg_at_10: float
    recall_at_100: float
    mrr_at_10: float


@dataclass
class BeirReport:
    dataset: str
    queries: int
    documents: int
    rows: list[BeirRow]
    timings: dict[str, float] = field(default_factory=dict)


def _score(dataset: BeirDataset, runs: list[list[str]]) -> tuple[float, float, float]:
    n = len(dataset.query_ids)
    ndcg = sum(ndcg_at_k(r, dataset.qrels[q], 10) for q, r in zip(dataset.query_ids, runs, strict=True))
    rec = sum(recall_at_k_qrels(r, dataset.qrels[q], 100)
              for q, r in zip(dataset.query_ids, runs, strict=True))
    mrr = sum(mrr_at_k_qrels(r, dataset.qrels[q], 10) for q, r in zip(dataset.query_ids, runs, strict=True))
    return ndcg / n, rec / n, mrr / n


def corpus_vectors(dataset: BeirDataset, embedder: TextEmbedder, cache_dir: Path | None,
                   progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """Document vectors, cached on disk under a name holding the model key and a digest of
    the texts, so a cache can never be read for another model or corpus."""
    digest = hashlib.sha256("\x00".join(dataset.doc_texts).encode("utf-8")).hexdigest()[:16]
    path = (cache_dir / f"{dataset.name}-{embedder.spec.key}-{digest}.npy") if cache_dir else None
    if path is not None and path.is_file():
        return np.load(path)
    vectors = embedder.embed(dataset.doc_texts, progress=progress)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, vectors)
        tmp.replace(path)
    return vectors


def run_beir(dataset: BeirDataset, embedder: TextEmbedder, cache_dir: Path | None = None,
             progress: Callable[[int, int], None] | None = None,
             k1_values: tuple[float, ...] = (K1,)) -> BeirReport:
    """Dense once; BM25 and hybrid for each analyzer and each ``k1`` (b = 0.75)."""
    timings: dict[str, float] = {}
    t = time.perf_counter()
    doc_vectors = corpus_vectors(dataset, embedder, cache_dir, progress)
    timings["embed_corpus"] = time.perf_counter() - t
    t = time.perf_counter()
    query_vectors = embedder.embed(dataset.query_texts)
    timings["embed_queries"] = time.perf_counter() - t
    t = time.perf_counter()
    dense = [top_k(cosine_distances(doc_vectors, q), DEPTH).tolist() for q in query_vectors]
    timings["dense_search"] = time.perf_counter() - t
    ids = dataset.doc_ids
    rows = [BeirRow("dense", None, None, *_score(dataset, [[ids[i] for i in r] for r in dense]))]
    for k1 in k1_values:
        for analyzer in Analyzer:
            name = f"{analyzer.value}_k1={k1}"
            t = time.perf_counter()
            scorer = Bm25Scorer.from_tables(
                build_bm25_tables(ids, dataset.doc_texts, analyzer, k1=k1), analyzer)
            timings[f"bm25_index_{name}"] = time.perf_counter() - t
            t = time.perf_counter()
            sparse = [scorer.top(q, DEPTH).rows.tolist() for q in dataset.query_texts]
            timings[f"bm25_search_{name}"] = time.perf_counter() - t
            rows.append(BeirRow("bm25", analyzer.value, k1,
                                *_score(dataset, [[ids[i] for i in r] for r in sparse])))
            t = time.perf_counter()
            fused = [[ids[i] for i, _ in reciprocal_rank_fusion([d, s])][:DEPTH]
                     for d, s in zip(dense, sparse, strict=True)]
            timings[f"fusion_{name}"] = time.perf_counter() - t
            rows.append(BeirRow("hybrid", analyzer.value, k1, *_score(dataset, fused)))
    return BeirReport(dataset.name, len(dataset.query_ids), len(ids), rows, timings)


def beir_partition(dataset: BeirDataset, vectors: np.ndarray, model_key: str,
                   k1: float = K1) -> PartitionIndex:
    """The dataset as an in-memory partition (one document, one chunk), so candidate retrieval
    settings run through the same ``retrieve`` as the bundled corpus."""
    n = len(dataset.doc_ids)
    scorers = {a: Bm25Scorer.from_tables(build_bm25_tables(dataset.doc_ids, dataset.doc_texts, a,
                                                           k1=k1), a) for a in Analyzer}
    hashes = list(dataset.doc_ids)
    return PartitionIndex(
        chunker="beir", model_key=model_key, model_name=ModelKey.parse(model_key).name,
        model_fingerprint=ModelKey.parse(model_key).fingerprint, generation="in-memory", published_at="",
        chunk_ids=list(dataset.doc_ids),
        document_ids=list(dataset.doc_ids), sections=[""] * n, contents=list(dataset.doc_texts),
        texts=list(dataset.doc_texts), starts=np.zeros(n, np.int64),
        ends=np.array([len(t) for t in dataset.doc_texts], np.int64), content_hashes=hashes,
        vectors=np.ascontiguousarray(vectors, np.float32), bm25=scorers, documents={},
        rows_by_content=ContentRows.of(hashes))


def run_beir_candidates(dataset: BeirDataset, embedder: TextEmbedder,
                        candidates: Mapping[str, RetrievalSettings], cache_dir: Path | None = None,
                        progress: Callable[[int, int], None] | None = None,
                        k1: float = K1) -> list[BeirRow]:
    """nDCG@10, Recall@100 and MRR@10 of each named retrieval setting (depth 1000, no duplicate
    collapse), through ``retrieve``; a row's retriever is ``<retriever>[<name>]``."""
    vectors = corpus_vectors(dataset, embedder, cache_dir, progress)
    index = beir_partition(dataset, vectors, embedder.spec.key, k1)
    queries = [QueryVector(embedder.spec.key, v) for v in embedder.embed(dataset.query_texts)]
    rows = []
    for name, settings in candidates.items():
        settings = replace(settings, depth=DEPTH, collapse_duplicates=False)
        runs = [[dataset.doc_ids[h.row] for h in retrieve(index, q, text, settings).hits]
                for q, text in zip(queries, dataset.query_texts, strict=True)]
        uses_bm25 = settings.retriever.value != "dense"
        rows.append(BeirRow(f"{settings.retriever.value}[{name}]",
                            settings.analyzer.value if uses_bm25 else None,
                            k1 if uses_bm25 else None, *_score(dataset, runs)))
    return rows
