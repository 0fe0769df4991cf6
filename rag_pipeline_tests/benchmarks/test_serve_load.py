"""The load test's nearest-rank percentile."""

from __future__ import annotations

from rag_pipeline.benchmarks.serve_load import percentile


def test_nearest_rank_percentiles():
    values = [float(v) for v in range(1, 101)][::-1]
    assert (percentile(values, 50), percentile(values, 95), percentile(values, 99)) == (50.0, 95.0, 99.0)
    assert percentile([7.0], 99) == 7.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0
