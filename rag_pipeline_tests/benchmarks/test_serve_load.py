"""The load test's arithmetic: nearest-rank percentiles, what the cores allow, CPU time, spreads."""

from __future__ import annotations

from rag_pipeline.benchmarks.serve_load import percentile


def test_nearest_rank_percentiles():
    values = [float(v) for v in range(1, 101)][::-1]
    assert (percentile(values, 50), percentile(values, 95), percentile(values, 99)) == (50.0, 95.0, 99.0)
    assert percentile([7.0], 99) == 7.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0


def test_the_scaling_line_puts_the_ratio_beside_what_the_cores_allow():
    from rag_pipeline.benchmarks.serve_load import Round, scaling_line

    one = Round(1, latencies_ms=[10.0] * 100, seconds=1.0, server_cpu_s=1.2, client_cpu_s=0.1)
    many = Round(4, latencies_ms=[25.0] * 160, seconds=1.0, server_cpu_s=1.76, client_cpu_s=0.16)
    assert (many.throughput, many.core_ms_per_request) == (160.0, 12.0)
    # 2 cores at 12 core-ms per request: at most 166.7 req/s, 1.67 times one client's 100.
    assert scaling_line(one, many, 2) == (
        "throughput 4 clients / 1: 1.60x; the cores allow at most 1.67x (2 cores / 12.00 core-ms "
        "per request = 167 req/s against 100.0 for 1)")


def test_process_cpu_seconds_counts_every_thread_of_a_process():
    import os
    import threading
    import time

    from rag_pipeline.benchmarks.serve_load import process_cpu_seconds

    def spin(seconds: float) -> None:
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    before = process_cpu_seconds(os.getpid())
    threads = [threading.Thread(target=spin, args=(0.3,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Two threads of 0.3 s CPU each (clock ticks are 10 ms; the GIL only interleaves them).
    assert 0.55 <= process_cpu_seconds(os.getpid()) - before <= 0.9


def test_spread_is_the_median_and_range():
    from rag_pipeline.benchmarks.serve_load import spread

    assert spread([3.0, 1.0, 2.0], " ms") == "2.00 ms (1.00 to 3.00)"
    assert spread([1.5], "x") == "1.50x"
