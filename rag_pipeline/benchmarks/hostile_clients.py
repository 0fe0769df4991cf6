"""The query service under hostile clients, on loopback: what one honest client sees.

    .venv/bin/python -m rag_pipeline.benchmarks.hostile_clients

It indexes a small generated corpus with the default model (straight from the core, into a
temporary folder), starts ``rag-pipeline serve`` on 127.0.0.1, and measures one honest client
(``GET /health`` and ``POST /ask``, one keep-alive connection each, from 127.0.0.1) twice: alone,
then while ``--slow`` connections from 127.0.0.2 send one header line every ``--dribble`` seconds
and never finish their request head, and one more connection sends a ``--big-header-mib`` MiB
header. It prints p50 / p99 / max latency and errors per round, and what each slow connection
got (408: cut off at the head deadline; 503: over the per-address limit; none: still held).
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from rag_pipeline.benchmarks.serve_load import HOST, free_port, percentile, wait_ready

SLOW_ADDRESS = "127.0.0.2"
TOPICS = ("timeouts", "caches", "exporters", "locks", "shells", "upgrades", "tokens", "queues")


def write_corpus(root: Path) -> None:
    """Eight small Markdown documents, one topic each, two sections per document."""
    root.mkdir(parents=True)
    for number, topic in enumerate(TOPICS):
        (root / f"{topic}.md").write_text(
            f"# About {topic}\n\n## What {topic} do\n\nThe {topic} of the frobnicator keep "
            f"document {number} in order, and each of the {topic} is checked every {number + 2} "
            f"seconds.\n\n## Configuring {topic}\n\nSet the {topic} key in the configuration "
            f"file to change how many {topic} the frobnicator keeps.\n", encoding="utf-8")


def build(data: Path, corpus: Path) -> None:
    from rag_pipeline.core.chunking.strategies import ChunkingStrategy
    from rag_pipeline.core.config.keys import declared_models
    from rag_pipeline.core.config.parse import load_config
    from rag_pipeline.core.embedding.embedder import load_embedder
    from rag_pipeline.core.index.partition_build import build_partition
    from rag_pipeline.core.ingest import extract_corpus
    from rag_pipeline.core.storage.warehouse import Warehouse
    from rag_pipeline.project_paths import config_path

    spec = declared_models(load_config(config_path()))[0]
    build_partition(Warehouse(data), extract_corpus(corpus).records, ChunkingStrategy.HEADER,
                    load_embedder(spec))


def measure(port: int, seconds: float) -> dict[str, tuple[list[float], Counter]]:
    """``GET /health`` and ``POST /ask`` in turn for ``seconds``; latencies (ms) and errors."""
    out: dict[str, tuple[list[float], Counter]] = {"health": ([], Counter()),
                                                   "ask": ([], Counter())}
    conns = {name: http.client.HTTPConnection(HOST, port, timeout=30) for name in out}
    deadline = time.monotonic() + seconds
    number = 0
    while time.monotonic() < deadline:
        for name, conn in conns.items():
            started = time.perf_counter()
            try:
                if name == "health":
                    conn.request("GET", "/health")
                else:
                    topic = TOPICS[number % len(TOPICS)]
                    conn.request("POST", "/ask", json.dumps({"question": f"how often are {topic} "
                                                             "checked"}),
                                 {"Content-Type": "application/json"})
                response = conn.getresponse()
                response.read()
                if response.status != 200:
                    out[name][1][f"HTTP {response.status}"] += 1
                    continue
                out[name][0].append((time.perf_counter() - started) * 1000)
            except (OSError, http.client.HTTPException) as exc:
                out[name][1][type(exc).__name__] += 1
                conn.close()
                conns[name] = http.client.HTTPConnection(HOST, port, timeout=30)
        number += 1
    for conn in conns.values():
        conn.close()
    return out


def print_round(label: str, measured: dict[str, tuple[list[float], Counter]]) -> None:
    for name, (latencies, errors) in measured.items():
        if latencies:
            print(f"{label:34s} {name:6s} {len(latencies):5d} ok  p50 "
                  f"{percentile(latencies, 50):7.2f} ms  p99 {percentile(latencies, 99):7.2f} ms  "
                  f"max {max(latencies):7.2f} ms  errors {dict(errors) or 0}")
        else:
            print(f"{label:34s} {name:6s}     0 ok  errors {dict(errors)}")


def attack(port: int, slow: int, dribble: float, big_mib: int, stop: threading.Event,
           outcome: Counter) -> None:
    """Holds ``slow`` dribbling connections and sends one big header until ``stop``; counts
    the status each slow connection got."""
    conns = []
    for _ in range(slow):
        conn = socket.socket()
        conn.settimeout(0.5)
        conn.bind((SLOW_ADDRESS, 0))
        try:
            conn.connect((HOST, port))
            conn.sendall(b"POST /ask HTTP/1.1\r\nhost: x\r\n")
        except OSError:
            outcome["refused at connect"] += 1
            conn.close()
            continue
        conns.append(conn)

    def big_header() -> None:
        with socket.create_connection((HOST, port), timeout=10) as conn:
            sent = 0
            try:
                conn.sendall(b"GET /health HTTP/1.1\r\nhost: x\r\nx-big: ")
                while sent < big_mib << 20:
                    conn.sendall(b"a" * (1 << 20))
                    sent += 1 << 20
            except OSError:
                pass
            outcome[f"big header: cut off after {sent >> 20} MiB"] += 1

    threading.Thread(target=big_header, daemon=True).start()
    open_conns = list(conns)
    while not stop.wait(dribble):
        for conn in list(open_conns):
            try:
                conn.sendall(b"x-slow: 1\r\n")
            except OSError:
                open_conns.remove(conn)
    for conn in conns:
        try:
            reply = conn.recv(200)
        except OSError:
            reply = b""
        outcome[reply.split(b" ", 2)[1].decode() if reply.startswith(b"HTTP/1.1 ") else
                "none (closed or held)"] += 1
        conn.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slow", type=int, default=300, help="Slow connections.")
    parser.add_argument("--dribble", type=float, default=2.0,
                        help="Seconds between two header lines of a slow connection.")
    parser.add_argument("--big-header-mib", type=int, default=150)
    parser.add_argument("--seconds", type=float, default=20.0, help="Length of each round.")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hostile-clients-") as tmp:
        data, corpus = Path(tmp) / "data", Path(tmp) / "corpus"
        write_corpus(corpus)
        build(data, corpus)
        port = free_port()
        log = (Path(tmp) / "serve.log").open("w")
        server = subprocess.Popen(
            [sys.executable, "-c", "from rag_pipeline.cli import main; main()", "--data-dir",
             str(data), "serve", "--host", HOST, "--port", str(port), "--workers", "2"],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_ready(port, server)
            measure(port, 2.0)  # warm up
            print_round("alone", measure(port, args.seconds))
            stop, outcome = threading.Event(), Counter()
            attacker = threading.Thread(target=attack, args=(port, args.slow, args.dribble,
                                                             args.big_header_mib, stop, outcome))
            attacker.start()
            time.sleep(1.0)
            print_round(f"with {args.slow} slow + {args.big_header_mib} MiB header",
                        measure(port, args.seconds))
            stop.set()
            attacker.join(timeout=60)
            print("slow connections got: " + ", ".join(f"{k}: {v}" for k, v in
                                                       sorted(outcome.items())))
        finally:
            server.terminate()
            server.wait(timeout=30)
            log.close()


if __name__ == "__main__":
    main()
