"""Wall time of ``rag-pipeline ask`` when a ``serve`` is running: the whole command, from the
process's start to its exit, as a user at a terminal sees it.

Run::

    .venv/bin/python -m rag_pipeline.benchmarks.ask_via_serve                   # 20 questions
    .venv/bin/python -m rag_pipeline.benchmarks.ask_via_serve --data-dir DIR    # an index of yours

Without ``--data-dir`` it builds, in a temporary folder, the production partition (header x the
default model) of five pages of the bundled Python reference with the real model. It starts
``rag-pipeline serve`` on 127.0.0.1 (a free port) over that folder, waits for the record
``ask`` finds it by, then runs ``ask QUESTION --timings`` ``--runs`` times, one process each,
checking that every answer came from the running serve, and prints the median, p90 and maximum
wall time beside the CPU time one ``ask`` process used (user + system: what the wall time comes
down to on an idle machine, less the HTTP wait), the server's own answer time and the
machine's load average.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rag_pipeline.core.runtime.processes import stop_process

PAGES = ("compound.md", "for.md", "global.md", "calls.md", "break.md")
QUESTIONS = ("what happens to the loop variable when a for loop is terminated by break",
             "what does the global statement do",
             "how are keyword arguments matched to parameters",
             "what is the capital of france")
COMMAND = "from rag_pipeline.cli import main; main()"
READY_TIMEOUT_S = 600.0


def _build(data_dir: Path) -> None:
    """The production partition of :data:`PAGES` of the Python reference, with the real model."""
    from rag_pipeline.core.chunking.strategies import DEFAULT_STRATEGY
    from rag_pipeline.core.config.keys import declared_models
    from rag_pipeline.core.config.parse import load_config
    from rag_pipeline.core.embedding.embedder import load_embedder
    from rag_pipeline.core.index.partition_build import build_partition
    from rag_pipeline.core.ingest import extract_corpus
    from rag_pipeline.core.ingest.corpus_export import export_python_reference
    from rag_pipeline.core.storage.warehouse import Warehouse
    from rag_pipeline.project_paths import config_path

    every = data_dir.parent / "reference"
    export_python_reference(every)
    corpus = data_dir.parent / "corpus"
    corpus.mkdir(exist_ok=True)
    for page in PAGES:
        shutil.copy(every / page, corpus / page)
    build_partition(Warehouse(data_dir), extract_corpus(corpus).records, DEFAULT_STRATEGY,
                    load_embedder(declared_models(load_config(config_path()))[0]))


def _wait_for_record(data_dir: Path, server: subprocess.Popen) -> None:
    from rag_pipeline.core.runtime.serve_record import read_serve_record

    deadline = time.monotonic() + READY_TIMEOUT_S
    while read_serve_record(data_dir) is None:
        if server.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"serve did not start (exit {server.poll()}): see its output above")
        time.sleep(0.2)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="A data folder with a built production partition (default: build "
                             "one in a temporary folder).")
    parser.add_argument("--runs", type=int, default=20, help="How many `ask` processes.")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory(prefix="ask-via-serve-") as tmp:
        data_dir = args.data_dir
        if data_dir is None:
            data_dir = Path(tmp) / "data"
            started = time.perf_counter()
            _build(data_dir)
            print(f"built the header partition of {len(PAGES)} reference pages in "
                  f"{time.perf_counter() - started:.0f} s")
        base = [sys.executable, "-c", COMMAND, "--data-dir", str(data_dir)]
        server = subprocess.Popen([*base, "serve", "--port", "0", "--query-backend", "model"],
                                  start_new_session=True)
        try:
            _wait_for_record(data_dir, server)
            walls: list[float] = []
            cpus: list[float] = []
            served_ms: list[float] = []
            for run in range(args.runs):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                started = time.perf_counter()
                result = subprocess.run([*base, "ask", QUESTIONS[run % len(QUESTIONS)],
                                         "--timings"], capture_output=True, text=True, timeout=120)
                walls.append(time.perf_counter() - started)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
                lines = result.stdout.splitlines()
                if result.returncode != 0 or not lines or not lines[-1].startswith(
                        "answered by: the running serve"):
                    raise SystemExit(f"ask was not answered by the serve: {result.stdout[-300:]}"
                                     f"{result.stderr[-300:]}")
                total = re.search(r"\btotal ([0-9.]+)", result.stdout)
                if total:
                    served_ms.append(float(total.group(1)))
        finally:
            stop_process(server, 60, group=True)
    load = os.getloadavg()
    print(f"ask via a running serve, {args.runs} processes: wall p50 {statistics.median(walls):.3f} s, "
          f"p90 {_percentile(walls, 0.9):.3f} s, max {max(walls):.3f} s; CPU time of one `ask` "
          f"process p50 {statistics.median(cpus):.3f} s; the server's own answer "
          f"p50 {statistics.median(served_ms):.1f} ms; load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
