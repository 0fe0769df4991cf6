"""What a caller chooses a ranking by: the retriever, and the BM25 analyzer by default.

Apart from :mod:`.retriever` (which ranks) so that a command line can offer the choices
without loading numpy and the index code.
"""

from __future__ import annotations

from enum import StrEnum

from rag_pipeline.core.text.analyzers import Analyzer


class Retriever(StrEnum):
    DENSE = "dense"
    BM25 = "bm25"
    HYBRID = "hybrid"


DEFAULT_ANALYZER = Analyzer.CODE
"""The evidence (README, "Evaluation"): the English analyzer (stemming + stop words) beats the
plain one on BEIR SciFact (BM25 nDCG@10 0.679 vs 0.662); keeping code tokens beside its terms
wins on the bundled set's ticket-style questions (hybrid R@4 7 wins / 0 losses, p = 0.016, no
question-style change); alone it is 0.002 below English on SciFact (RRF hybrid 0.7117 vs
0.7137), with the default min-max fusion the hybrid reaches 0.7212."""
