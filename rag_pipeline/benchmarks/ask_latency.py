"""Median ``ask`` latency per stage over the bundled gold and out-of-domain questions.

Run after ``make index``: ``.venv/bin/python -m rag_pipeline.benchmarks.ask_latency``.
The index and the model are loaded once (as in a server process) and excluded from the
per-question figures; the load time is printed separately.
"""

from __future__ import annotations

import statistics
import time

from rag_pipeline.benchmarks import go_offline
from rag_pipeline.core.answer.ask import AskSettings, ask
from rag_pipeline.core.chunking.strategies import DEFAULT_STRATEGY
from rag_pipeline.core.config.gold_file import load_gold, load_ood
from rag_pipeline.core.config.keys import declared_models
from rag_pipeline.core.embedding.embedder import load_embedder
from rag_pipeline.core.index.store import load_partition
from rag_pipeline.project_paths import DEFAULT_DATA_DIR, DEFAULT_EVAL_DIR

STAGES = ("embed_question", "dense_scan", "bm25", "fusion", "quote", "total")


def main() -> None:
    go_offline()
    spec = declared_models()[0]
    started = time.perf_counter()
    index = load_partition(DEFAULT_DATA_DIR, DEFAULT_STRATEGY.value, spec.key)
    index_seconds = time.perf_counter() - started
    started = time.perf_counter()
    embedder = load_embedder(spec)
    model_seconds = time.perf_counter() - started
    questions = [q for line in load_gold(DEFAULT_EVAL_DIR / "gold.jsonl")
                 for q in (line.question, line.ticket)]
    questions += [o.query for o in load_ood(DEFAULT_EVAL_DIR / "ood.jsonl")]
    ask(questions[0], index, embedder, AskSettings())  # warm-up, not counted
    timings = []
    answered = 0
    for question in questions:
        answer = ask(question, index, embedder, AskSettings())
        answered += answer.answered
        timings.append(answer.timings)
    print(f"partition {DEFAULT_STRATEGY.value}|{spec.key}: {len(index)} chunks; "
          f"index load {index_seconds * 1000:.0f} ms, "
          f"model load {model_seconds * 1000:.0f} ms (once per process)")
    print(f"{len(questions)} questions ({answered} answered, {len(questions) - answered} refused)")
    print(f"{'stage':16s} {'questions':>10s} {'median ms':>10s} {'p90 ms':>10s} {'max ms':>10s}")
    for stage, count, median, p90, most in stage_figures(timings):
        print(f"{stage:16s} {count:10d} {median:10.2f} {p90:10.2f} {most:10.2f}")


def stage_figures(timings: list[dict[str, float]]) -> list[tuple[str, int, float, float, float]]:
    """Per stage of :data:`STAGES`: how many answers timed it (a refusal quotes nothing, so has
    no ``quote``), and its median, 90th percentile and maximum in milliseconds; a stage no
    answer timed is left out."""
    figures = []
    for stage in STAGES:
        values = sorted(t[stage] * 1000 for t in timings if stage in t)
        if values:
            p90 = values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]
            figures.append((stage, len(values), statistics.median(values), p90, values[-1]))
    return figures


if __name__ == "__main__":
    main()
