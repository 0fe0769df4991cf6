"""What access control costs: ``/ask`` p50/p99 with ``[access]`` against without, side by side in
one run, and the filtered approximate search's recall@10 at 50 %, 10 % and 1 % selectivity.

Run after ``make index`` (the bundled corpus's production partition in ``data/``)::

    .venv/bin/python -m rag_pipeline.benchmarks.access --factors 1 100

For each factor ``f`` the served partition is copied ``f`` times into a temporary folder
(:func:`rag_pipeline.benchmarks.scale.write_copies`: ids prefixed ``copy<i>/``, vectors nudged,
BM25 statistics scaled, the ANN index built). Two services are started over it in this process
with the same model object: one without access, one with three rules (documents whose file name
starts with ``a``-``h`` are group ``a``'s, ``i``-``p`` group ``b``'s, the rest ``c``'s) and a
token of group ``a``. Every bundled question is then asked through each app's ``GET /ask``
(FastAPI's ASGI test client: the whole request path, routing, the authentication middleware
and the token's check included, no socket), alternating the two question by question, after a
warm-up round; p50/p99 per side and their ratio are printed.

The recall part ranks the partition's own questions (the bundled ones, embedded once) and
seeded calibration questions (:func:`rag_pipeline.core.index.ann.calibration_questions`) on the
ANN index with a random readable mask of each selectivity, against the exact scan of the
readable rows (the oracle), and times both; it also times the selector search below the
exact-scan threshold (forced), so the threshold's choice is measured here.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from rag_pipeline.benchmarks import go_offline

SELECTIVITIES = (0.5, 0.1, 0.01)
RULES = (("**/[a-h]*", ("a",)), ("**/[i-p]*", ("b",)), ("**", ("c",)))


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def questions() -> list[str]:
    from rag_pipeline.core.config.gold_file import load_gold, load_ood
    from rag_pipeline.project_paths import DEFAULT_EVAL_DIR

    found = [q for line in load_gold(DEFAULT_EVAL_DIR / "gold.jsonl") for q in (line.question, line.ticket)]
    return found + [o.query for o in load_ood(DEFAULT_EVAL_DIR / "ood.jsonl")]


def ask_side_by_side(data_dir: Path, chunker: str, spec, embedder, asked: list[str],
                     rounds: int) -> dict:
    """``/ask`` wall milliseconds per side, interleaved question by question."""
    from fastapi.testclient import TestClient

    from rag_pipeline.core.config.access import AccessPolicy, AccessRule
    from rag_pipeline.core.index.access import labelled
    from rag_pipeline.core.storage.warehouse import Warehouse
    from rag_pipeline.service.app import create_app
    from rag_pipeline.service.auth import AccessState
    from rag_pipeline.service.query_service import ServeSettings
    from rag_pipeline.service.run import running_service
    from rag_pipeline.service.tokens import TokenStore

    policy = AccessPolicy(tuple(AccessRule(g, r) for g, r in RULES))
    store = TokenStore(data_dir)
    token = store.add("bench", ("a",))
    settings = ServeSettings(chunker, spec.key, workers=1)
    warehouse = Warehouse(data_dir)
    with running_service(warehouse, settings, lambda: embedder, poll_seconds=3600) as plain, \
            running_service(warehouse, settings, lambda: embedder, poll_seconds=3600,
                            access=AccessState(policy, store, poll_seconds=3600)) as guarded:
        index = labelled(guarded.follower.current.index, policy)
        selectivity = index.access.readable(frozenset({"a"})).selectivity
        with TestClient(create_app(plain)) as open_client, TestClient(create_app(guarded)) as client:
            headers = {"Authorization": f"Bearer {token}"}
            times: dict[str, list[float]] = {"without": [], "with": []}
            sources: dict[str, list[int]] = {"without": [], "with": []}
            for round_ in range(rounds + 1):
                for question in asked:
                    for side, http, extra in (("without", open_client, {}), ("with", client, headers)):
                        started = time.perf_counter()
                        response = http.get("/ask", params={"q": question, "cut": 2.0}, headers=extra)
                        elapsed = (time.perf_counter() - started) * 1000
                        if response.status_code != 200:
                            raise SystemExit(f"/ask answered {response.status_code}: {response.text}")
                        if round_:  # round 0 warms both up
                            times[side].append(elapsed)
                            sources[side].append(len(response.json()["citations"]))
        path = plain.status()["dense_path"]
    return {"rows": len(index), "selectivity": selectivity, "path": path, "times": times,
            "sources": sources}


def filtered_recall(index, asked_vectors: np.ndarray, seed: int = 11) -> list[dict]:
    """Recall@10 of the filtered ANN search against the exact filtered scan, per selectivity."""
    from rag_pipeline.core.index import ann
    from rag_pipeline.core.index.access import Readable

    vectors = index.vectors
    probes = np.concatenate([asked_vectors, ann.calibration_questions(np.asarray(vectors), 200, seed)])
    rng = np.random.default_rng(seed)
    out = []
    for selectivity in SELECTIVITIES:
        mask = rng.random(len(vectors)) < selectivity
        readable = Readable.of_mask(mask)
        matrix = np.asarray(vectors)[readable.rows]
        recalls, forced_recalls, ann_ms, forced_ms, exact_ms = [], [], [], [], []
        for query in probes:
            started = time.perf_counter()
            exact = readable.rows[ann.exact_top_k(matrix, query[None, :], 10)[0]]
            exact_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            rows, _ = index.ann.search(vectors, query, 10, readable=readable)
            ann_ms.append((time.perf_counter() - started) * 1000)
            recalls.append(ann.recall_at_k(rows, exact))
            saved = ann.FILTER_EXACT_SELECTIVITY
            ann.FILTER_EXACT_SELECTIVITY = 0.0  # the selector alone, whatever the selectivity
            try:
                started = time.perf_counter()
                rows, _ = index.ann.search(vectors, query, 10, readable=readable)
                forced_ms.append((time.perf_counter() - started) * 1000)
            finally:
                ann.FILTER_EXACT_SELECTIVITY = saved
            forced_recalls.append(ann.recall_at_k(rows, exact))
        out.append({"selectivity": selectivity, "readable": len(readable), "queries": len(probes),
                    "recall": float(np.mean(recalls)), "min_recall": float(np.min(recalls)),
                    "served_p50_ms": statistics.median(ann_ms),
                    "selector_recall": float(np.mean(forced_recalls)),
                    "selector_p50_ms": statistics.median(forced_ms),
                    "exact_p50_ms": statistics.median(exact_ms),
                    "served_by": "exact scan of the readable rows"
                    if selectivity < ann.FILTER_EXACT_SELECTIVITY else "IVF with an ID selector"})
    return out


def main(argv: list[str] | None = None) -> None:
    go_offline()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--factors", type=int, nargs="+", default=[1, 100])
    parser.add_argument("--rounds", type=int, default=2, help="Rounds of every question per side.")
    parser.add_argument("--source", type=Path, default=None,
                        help="The data folder to copy (default: the project's data/).")
    args = parser.parse_args(argv)

    from rag_pipeline.benchmarks.scale import write_copies
    from rag_pipeline.core.chunking.strategies import DEFAULT_STRATEGY
    from rag_pipeline.core.config.keys import declared_models
    from rag_pipeline.core.embedding.embedder import load_embedder
    from rag_pipeline.core.index.store import load_partition
    from rag_pipeline.core.retrieval.retriever import RetrievalSettings
    from rag_pipeline.project_paths import DEFAULT_DATA_DIR
    from rag_pipeline.service.run import pin_threads

    spec = declared_models()[0]
    chunker = DEFAULT_STRATEGY.value
    asked = questions()
    pin_threads()
    embedder = load_embedder(spec)
    asked_vectors = np.asarray(embedder.embed(asked), np.float32)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; "
          f"{len(asked)} bundled questions; model {spec.key}")
    with tempfile.TemporaryDirectory(prefix="access-bench-") as tmp:
        source = Path(tmp) / "source"
        shutil.copytree((args.source or DEFAULT_DATA_DIR) / "warehouse", source / "warehouse")
        for factor in args.factors:
            target = Path(tmp) / f"x{factor}"
            started = time.perf_counter()
            write_copies(source, target, chunker, spec.key, factor)
            built = time.perf_counter() - started
            result = ask_side_by_side(target, chunker, spec, embedder, asked, args.rounds)
            t = result["times"]
            p50 = {s: statistics.median(v) for s, v in t.items()}
            p99 = {s: _p(v, 0.99) for s, v in t.items()}
            print(f"\n{factor}x: {result['rows']} chunks (copies built in {built:.0f} s), dense path "
                  f"{result['path']}; the token's group reads {result['selectivity']:.1%} of them")
            print(f"  /ask without access: p50 {p50['without']:.1f} ms  p99 {p99['without']:.1f} ms  "
                  f"(mean sources {statistics.mean(result['sources']['without']):.2f})")
            print(f"  /ask with access:    p50 {p50['with']:.1f} ms  p99 {p99['with']:.1f} ms  "
                  f"(mean sources {statistics.mean(result['sources']['with']):.2f})")
            print(f"  ratio with/without:  p50 {p50['with'] / p50['without']:.2f}x  "
                  f"p99 {p99['with'] / p99['without']:.2f}x  ({len(t['with'])} requests a side, "
                  "interleaved)")
            index = load_partition(target, chunker, spec.key)
            if index.ann is None:
                print("  (no ANN index: filtered recall not measured)")
                continue
            crossover = RetrievalSettings().crossover
            print(f"  filtered ANN (nlist {index.ann.nlist}, nprobe {index.ann.nprobe}; serves from "
                  f"{crossover} chunks) recall@10 against the exact filtered scan:")
            for row in filtered_recall(replace(index), asked_vectors):
                print(f"    {row['selectivity']:>5.0%} readable ({row['readable']} rows, "
                      f"{row['queries']} queries): recall@10 {row['recall']:.4f} (min "
                      f"{row['min_recall']:.1f}) served by {row['served_by']} p50 "
                      f"{row['served_p50_ms']:.2f} ms; selector alone: recall {row['selector_recall']:.4f} "
                      f"p50 {row['selector_p50_ms']:.2f} ms; exact scan p50 {row['exact_p50_ms']:.2f} ms")


if __name__ == "__main__":
    main()
