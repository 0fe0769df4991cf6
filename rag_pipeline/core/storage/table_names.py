"""The names of the index's tables: one low-level home that build and query side both import."""

from __future__ import annotations

DOCUMENTS = "documents"
DOCUMENT_PAGES = "document_pages"
CHUNKS = "chunks"
EMBEDDINGS = "embeddings"
BM25_TERMS = "bm25_terms"
BM25_CHUNKS = "bm25_chunks"
BM25_POSTINGS = "bm25_postings"
BM25_PARAMS = "bm25_params"
BM25_TABLES = (BM25_TERMS, BM25_CHUNKS, BM25_POSTINGS, BM25_PARAMS)
ANN_INDEX = "ann_index"
EVAL_TABLES = ("eval_ranks", "eval_summary", "eval_paired", "eval_sweep", "eval_gold_errors",
               "eval_gate_cv")
"""The evaluation's tables, one model per partition."""
