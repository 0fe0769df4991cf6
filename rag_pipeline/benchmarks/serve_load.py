"""Load test of the query service on loopback: N concurrent clients, a fixed number of requests.

Run after ``make index``::

    .venv/bin/python -m rag_pipeline.benchmarks.serve_load                 # 1 and 4 clients
    .venv/bin/python -m rag_pipeline.benchmarks.serve_load --reindex       # across a re-index

It starts ``rag-pipeline serve`` on 127.0.0.1 (a free port) over a copy of the data folder, so
the project's own index is never written, waits for ``/health``, then for each client count
sends ``--requests`` questions (the bundled gold and out-of-domain questions, in turn) over
keep-alive connections and prints p50/p95/p99 latency, throughput, errors and the generations
that answered. Each ``--query-backends`` entry starts its own server (``serve --query-backend``:
ONNX Runtime or OpenVINO fp32 questions, or the model's own backend), so all are measured in one
run. Beside them it prints the floor: the server's own ``ask`` time (``timings_ms`` ``total``,
median), the question embedding inside it (``embed_question``), the request thread's CPU time
of that work (``cpu``: on a shared machine the wall times include waiting for a core; a
runtime's own threads, which embed part of the question on the fast path, are not counted), an
HTTP round trip that does no work (``/health``), and the CPU time of server and clients per
request (``core ms``): with it, the most the cores allow 4 clients against 1. It also prints the
machine's load average, which says how shared the cores were. With ``--reindex`` a last
round of 4 clients runs while the served partition is re-indexed from a changed copy of the
corpus (one document edited, one added) into the served folder by the jobs ``rag-pipeline
index`` runs for it (documents, chunks, embeddings, which publishes the new generation), and
keeps asking until that run ends. Every round stops at ``--max-seconds`` (the re-index round
at ``--reindex-seconds``).

Some 420 lines in one module because it is one benchmark read top to bottom (start a server,
its rounds, the floor, the re-index round); the pieces another benchmark needs (``percentile``,
``questions``, ``free_port``, ``run_round``) are imported from here by ``scale``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rag_pipeline.benchmarks import offline_env
from rag_pipeline.core.config.gold_file import load_gold, load_ood
from rag_pipeline.core.runtime.processes import stop_process
from rag_pipeline.project_paths import DEFAULT_CORPUS_DIR, DEFAULT_DATA_DIR, DEFAULT_EVAL_DIR

HOST = "127.0.0.1"
READY_TIMEOUT_S = 180.0


@dataclass
class Round:
    clients: int
    latencies_ms: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)
    embed_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    generations: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0

    @property
    def throughput(self) -> float:
        return len(self.latencies_ms) / self.seconds if self.seconds else 0.0

    @property
    def core_ms_per_request(self) -> float:
        """CPU time of the server and of the clients (all their threads) per answered request:
        what a request costs the machine's cores, whoever runs it."""
        n = len(self.latencies_ms)
        return (self.server_cpu_s + self.client_cpu_s) * 1000 / n if n else math.nan


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in [0, 100]): the smallest value with at least ``q`` %
    of the values at or below it."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q / 100 * len(ordered) - 1e-9)))
    return ordered[rank - 1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def questions() -> list[str]:
    out = [q for line in load_gold(DEFAULT_EVAL_DIR / "gold.jsonl") for q in (line.question, line.ticket)]
    return out + [o.query for o in load_ood(DEFAULT_EVAL_DIR / "ood.jsonl")]


def _get(port: int, path: str, timeout: float = 5.0) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def wait_ready(port: int, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with {server.returncode} before it was ready")
        try:
            if _get(port, "/health", 1.0)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.25)
    raise SystemExit(f"the server was not ready after {READY_TIMEOUT_S:.0f} s")


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, all its threads (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_round(port: int, clients: int, requests: int, max_seconds: float, pool: list[str],
              keep_going: threading.Event | None = None, server_pid: int | None = None) -> Round:
    """``clients`` threads share ``requests`` questions; with ``keep_going`` set they go on
    (past ``requests``) until it is cleared. Either way nothing runs past ``max_seconds``.
    With ``server_pid`` the round also records the server's and the clients' CPU time."""
    result = Round(clients)
    lock = threading.Lock()
    counter = iter(range(10**9))
    deadline = time.monotonic() + max_seconds

    def next_number() -> int | None:
        with lock:
            n = next(counter)
        more = n < requests or (keep_going is not None and keep_going.is_set())
        return n if more and time.monotonic() < deadline else None

    def client() -> None:
        conn = http.client.HTTPConnection(HOST, port, timeout=30)
        try:
            while (n := next_number()) is not None:
                body = json.dumps({"question": pool[n % len(pool)]})
                started = time.perf_counter()
                try:
                    conn.request("POST", "/ask", body, {"Content-Type": "application/json"})
                    response = conn.getresponse()
                    payload = response.read()
                except (OSError, http.client.HTTPException) as exc:
                    with lock:
                        result.errors[type(exc).__name__] += 1
                    conn.close()
                    conn = http.client.HTTPConnection(HOST, port, timeout=30)
                    continue
                elapsed = (time.perf_counter() - started) * 1000
                with lock:
                    if response.status != 200:
                        result.errors[f"HTTP {response.status}"] += 1
                        continue
                    answer = json.loads(payload)
                    result.latencies_ms.append(elapsed)
                    result.server_ms.append(answer["timings_ms"]["total"])
                    result.embed_ms.append(answer["timings_ms"]["embed_question"])
                    result.cpu_ms.append(answer["timings_ms"]["cpu"])
                    result.generations[answer["generation"]] += 1
        finally:
            conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    server_cpu = process_cpu_seconds(server_pid) if server_pid else 0.0
    client_cpu = time.process_time()
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result.seconds = time.perf_counter() - started
    result.client_cpu_s = time.process_time() - client_cpu
    if server_pid:
        result.server_cpu_s = process_cpu_seconds(server_pid) - server_cpu
    return result


def http_floor(port: int, n: int = 200) -> float:
    """Median round trip of ``GET /health`` on one keep-alive connection (no question work)."""
    conn = http.client.HTTPConnection(HOST, port, timeout=10)
    samples = []
    try:
        for _ in range(n):
            started = time.perf_counter()
            conn.request("GET", "/health")
            conn.getresponse().read()
            samples.append((time.perf_counter() - started) * 1000)
    finally:
        conn.close()
    return statistics.median(samples)


def print_round(r: Round, label: str) -> None:
    n = len(r.latencies_ms)
    errors = sum(r.errors.values())
    if not n:
        print(f"{label:22s} no successful requests; errors {dict(r.errors)}")
        return
    print(f"{label:22s} {n:6d} {errors:6d} {percentile(r.latencies_ms, 50):8.2f} "
          f"{percentile(r.latencies_ms, 95):8.2f} {percentile(r.latencies_ms, 99):8.2f} "
          f"{r.throughput:9.1f} {statistics.median(r.server_ms):9.2f} {statistics.median(r.embed_ms):9.2f} "
          f"{statistics.median(r.cpu_ms):9.2f} {r.core_ms_per_request:9.2f}  "
          + ", ".join(f"{g}: {c}" for g, c in r.generations.items())
          + (f"  errors: {dict(r.errors)}" if errors else ""))


def spread(values: list[float], unit: str) -> str:
    """``median`` then ``unit``, and ``(min to max)`` when there are several values."""
    return (f"{statistics.median(values):.2f}{unit} ({min(values):.2f} to {max(values):.2f})"
            if len(values) > 1 else f"{values[0]:.2f}{unit}")


def scaling_line(one: Round, many: Round, cores: int) -> str:
    """The throughput ratio of two rounds beside the most the cores allow: ``cores`` seconds of
    CPU per second, spent at ``many``'s measured cost per request (server and clients), is at
    most ``cores / cost`` requests per second, whatever the scheduling."""
    ratio = many.throughput / one.throughput
    ceiling = cores * 1000 / many.core_ms_per_request
    return (f"throughput {many.clients} clients / {one.clients}: {ratio:.2f}x; the cores allow at "
            f"most {ceiling / one.throughput:.2f}x ({cores} cores / {many.core_ms_per_request:.2f} "
            f"core-ms per request = {ceiling:.0f} req/s against {one.throughput:.1f} for "
            f"{one.clients})")


def changed_corpus(source: Path, target: Path) -> Path:
    """A copy of the corpus with one document edited and one added."""
    shutil.copytree(source, target)
    edited = sorted(p for p in target.rglob("*") if p.is_file() and p.suffix in (".md", ".txt", ".html"))[0]
    edited.write_text(edited.read_text(encoding="utf-8") + "\n\nAn added closing paragraph about the "
                      "benchmark's re-index, so this document's last chunk changes.\n", encoding="utf-8")
    (target / "serve-load-added.md").write_text(
        "# Service load test\n\nThis page was added by the load test while the service kept "
        "answering questions.\n", encoding="utf-8")
    return target


def index_partition(data: Path, corpus: Path, chunker: str) -> None:
    """What ``rag-pipeline index`` runs for one partition, through the same Dagster jobs:
    documents, the chunker's chunks and BM25 tables, its embeddings (which publish the new
    generation)."""
    import dagster as dg

    from rag_pipeline.core.config.keys import declared_models
    from rag_pipeline.definitions import build_definitions
    from rag_pipeline.orchestration.automation import CHUNKS_JOB, DOCUMENTS_JOB, EMBEDDINGS_JOB

    spec = declared_models()[0]
    defs = build_definitions(data_dir=data, corpus_dir=corpus, models=[spec])
    with dg.DagsterInstance.ephemeral() as instance:
        for job, key in ((DOCUMENTS_JOB, None), (CHUNKS_JOB, chunker),
                         (EMBEDDINGS_JOB, dg.MultiPartitionKey({"chunker": chunker, "model": spec.key}))):
            result = defs.resolve_job_def(job).execute_in_process(
                instance=instance, partition_key=key, raise_on_error=False)
            if not result.success:
                raise SystemExit(f"{job} [{key}] failed")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                        help="A built data folder (copied; the copy is served).")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--requests", type=int, default=300, help="Requests per round.")
    parser.add_argument("--max-seconds", type=float, default=120.0, help="Bound of each round.")
    parser.add_argument("--repeat", type=int, default=3,
                        help="Client rounds per server (the machine is noisy: each is printed, "
                             "then the median and range).")
    parser.add_argument("--reindex", action="store_true",
                        help="Re-index a changed corpus during a last round (4 clients) of the "
                             "first query backend.")
    parser.add_argument("--reindex-seconds", type=float, default=900.0,
                        help="Bound of the re-index round.")
    parser.add_argument("--chunker", default="header", help="The served (and re-indexed) chunker.")
    parser.add_argument("--workers", type=int, default=None, help="Passed to serve --workers.")
    parser.add_argument("--query-backends", nargs="+", default=["onnxruntime", "openvino", "model"],
                        help="One server each, in this order: 'onnxruntime', 'openvino' or "
                             "'model' (serve --query-backend), 'onnxruntime:N' (with "
                             "--query-threads N) or 'openvino:N' (with --query-streams N).")
    parser.add_argument("--index-partition", nargs=3, metavar=("DATA", "CORPUS", "CHUNKER"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.index_partition:
        data, corpus, chunker = args.index_partition
        index_partition(Path(data), Path(corpus), chunker)
        return
    for entry in args.query_backends:
        if not re.fullmatch(r"model|(onnxruntime|openvino)(:[1-9][0-9]?)?", entry):
            parser.error(f"--query-backends: {entry!r} is not 'model', 'onnxruntime[:N]' or "
                         "'openvino[:N]'")
    if not (args.data_dir / "warehouse").is_dir():
        raise SystemExit(f"no index in {args.data_dir}: run `make index` first")

    pool = questions()
    with tempfile.TemporaryDirectory(prefix="serve-load-") as tmp:
        data = Path(tmp) / "data"
        shutil.copytree(args.data_dir / "warehouse", data / "warehouse")
        env = offline_env(DAGSTER_HOME=str(Path(tmp) / "dagster_home"))
        Path(env["DAGSTER_HOME"]).mkdir()
        print(f"questions: {len(pool)} (gold + out-of-domain), {args.requests} requests per round, "
              f"loopback {HOST}; {os.cpu_count()} CPUs, load average "
              + " ".join(f"{x:.1f}" for x in os.getloadavg()))
        print(f"{'round':22s} {'ok':>6s} {'errors':>6s} {'p50 ms':>8s} {'p95 ms':>8s} {'p99 ms':>8s} "
              f"{'req/s':>9s} {'ask ms':>9s} {'embed ms':>9s} {'cpu ms':>9s} {'core ms':>9s}  "
              "generations")
        for number, backend in enumerate(args.query_backends):
            serve_rounds(data, env, Path(tmp), args, pool, backend,
                         reindex_after=args.reindex and number == 0)


def serve_rounds(data: Path, env: dict[str, str], tmp: Path, args: argparse.Namespace,
                 pool: list[str], query_backend: str, reindex_after: bool) -> None:
    """One server with ``--query-backend query_backend``: the client rounds, then (if asked)
    the re-index round."""
    port = free_port()
    backend, _, count = query_backend.partition(":")
    command = [sys.executable, "-c", "from rag_pipeline.cli import main; main()",
               "--data-dir", str(data), "serve", "--host", HOST, "--port", str(port),
               "--chunker", args.chunker, "--poll", "0.5", "--query-backend", backend]
    if count:
        command += ["--query-threads" if backend == "onnxruntime" else "--query-streams", count]
    if args.workers:
        command += ["--workers", str(args.workers)]
    log_path = tmp / f"serve-{backend}-{count or 'default'}.log"
    server_log = log_path.open("w")
    server = subprocess.Popen(command, env=env, stdout=server_log, stderr=subprocess.STDOUT)
    try:
        wait_ready(port, server)
        path = json.loads(_get(port, "/status")[1])["query_path"]
        warm = run_round(port, 1, 20, args.max_seconds, pool)
        if warm.errors:
            raise SystemExit(f"warm-up failed: {dict(warm.errors)}")
        how = ("the model's own backend" if path["min_cosine"] is None else
               (f"{path['alone_threads']} thread(s) alone, one each side by side"
                if backend == "onnxruntime" else f"{path['streams']} stream(s)")
               + f", min cosine to the model's own {path['min_cosine']:.7f}")
        print(f"--query-backend {query_backend}: questions embedded by {path['backend']} ({how}); "
              f"floor: HTTP round trip without work (GET /health) p50 {http_floor(port):.2f} ms")
        one_p50, one_p99, ratios = [], [], []
        for repeat in range(args.repeat):
            rounds = []
            for clients in args.clients:
                r = run_round(port, clients, args.requests, args.max_seconds, pool,
                              server_pid=server.pid)
                rounds.append(r)
                print_round(r, f"{query_backend}, {clients} client{'s' if clients > 1 else ''}"
                               + (f" #{repeat + 1}" if args.repeat > 1 else ""))
            if rounds[0].latencies_ms:
                one_p50.append(percentile(rounds[0].latencies_ms, 50))
                one_p99.append(percentile(rounds[0].latencies_ms, 99))
            if len(rounds) >= 2 and rounds[0].latencies_ms and rounds[-1].latencies_ms:
                print(scaling_line(rounds[0], rounds[-1], os.cpu_count() or 1))
                ratios.append(rounds[-1].throughput / rounds[0].throughput)
        if args.repeat > 1 and one_p50:
            print(f"{query_backend} over {args.repeat} repeats: {args.clients[0]} client p50 "
                  f"{spread(one_p50, ' ms')}, p99 {spread(one_p99, ' ms')}"
                  + (f"; throughput {args.clients[-1]} / {args.clients[0]} {spread(ratios, 'x')}"
                     if ratios else ""))
        if reindex_after:
            reindex(port, data, env, tmp, args, pool, server.pid)
    finally:
        stop_process(server, 10)
        server_log.close()
        log_text = log_path.read_text()
        if "Traceback" in log_text:
            print("server log:\n" + log_text[-3000:])


def reindex(port: int, data: Path, env: dict[str, str], tmp: Path, args: argparse.Namespace,
            pool: list[str], server_pid: int) -> None:
    corpus = changed_corpus(DEFAULT_CORPUS_DIR, tmp / "changed-corpus")
    keep_going = threading.Event()
    keep_going.set()
    before = json.loads(_get(port, "/status")[1])["generation"]
    index_log = tmp / "index.log"
    with index_log.open("w") as log_file:
        index = subprocess.Popen(
            [sys.executable, "-m", "rag_pipeline.benchmarks.serve_load", "--index-partition",
             str(data), str(corpus), args.chunker],
            env=env, stdout=log_file, stderr=subprocess.STDOUT)
    started = time.perf_counter()

    def watch() -> None:
        index.wait()
        time.sleep(2.0)  # the service polls every 0.5 s; let the last generation answer
        keep_going.clear()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        r = run_round(port, 4, args.requests, args.reindex_seconds, pool, keep_going, server_pid)
    finally:
        if index.poll() is None:
            index.terminate()
            index.wait(timeout=30)
    status = json.loads(_get(port, "/status")[1])
    print(f"re-index of a changed corpus ({args.chunker} partition): exit {index.returncode} after "
          f"{time.perf_counter() - started:.1f} s; generation {before} -> {status['generation']} "
          f"({status['swaps']} swaps, {status['chunks']} chunks now, last error: {status['last_error']})")
    if index.returncode:
        print(index_log.read_text()[-2000:])
    print_round(r, "4 clients, re-index")


if __name__ == "__main__":
    main()
