"""rag_pipeline: a versioned, evaluated hybrid search index with cited answers and refusals."""
