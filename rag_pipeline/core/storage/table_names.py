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
FEEDBACK = "feedback"
SOURCE_ENTRIES = "source_entries"
"""Each document's source fingerprint, beside ``documents`` (which it would otherwise change
whenever a file is touched)."""
RECONCILIATION = "reconciliation"
"""What the last documents run added, changed, renamed, deleted, left and failed."""
ACCESS = "access"
"""The readers of every chunk under ``[access]`` (:mod:`rag_pipeline.core.index.access_table`)."""
EVAL_TABLES = ("eval_ranks", "eval_summary", "eval_paired", "eval_sweep", "eval_gold_errors",
               "eval_gate_cv")
"""The evaluation's tables, one model per partition."""
