"""The retrieval stage: a partition's chunks ranked for a question.

:mod:`.retriever` (``retrieve``, ``RetrievalSettings``, ``Hit``, ``Ranking``) ranks by dense
(:mod:`.dense`, exact top-k), BM25 (the index's scorer) or both fused (:mod:`.fusion`: RRF,
min-max); :mod:`.feedback` (RM3, Rocchio), :mod:`.sentences` (sentence vectors) and
:mod:`.rerank` (a cross-encoder) are the optional passes.
"""
