"""``ask_latency``'s figures per stage, over answers and refusals."""

from __future__ import annotations

from rag_pipeline.benchmarks.ask_latency import stage_figures


def test_a_refusal_has_no_quote_stage_and_each_stage_counts_the_answers_that_timed_it():
    """Found by a helper running the documented command: a refused question has no ``quote``
    timing, and the benchmark failed with ``KeyError: 'quote'``."""
    answered = {"embed_question": 0.004, "dense_scan": 0.001, "bm25": 0.002, "fusion": 0.0005,
                "quote": 0.003, "total": 0.011}
    refused = {k: v for k, v in answered.items() if k != "quote"} | {"total": 0.009}
    figures = stage_figures([answered, refused, answered])
    assert [(stage, count) for stage, count, *_ in figures] == [
        ("embed_question", 3), ("dense_scan", 3), ("bm25", 3), ("fusion", 3), ("quote", 2),
        ("total", 3)]
    assert [round(v, 3) for v in figures[-1][2:]] == [11.0, 11.0, 11.0]
    assert [round(v, 3) for v in figures[4][2:]] == [3.0, 3.0, 3.0]
    assert stage_figures([refused])[4][0] == "total"
