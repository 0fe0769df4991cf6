"""The query service under hostile clients, on loopback: what one honest client sees.

    .venv/bin/python -m rag_pipeline.benchmarks.hostile_clients

It indexes a small generated corpus with the default model (straight from the core, into a
temporary folder), starts ``rag-pipeline serve`` on 127.0.0.1, and measures one honest client
(``GET /health`` and ``POST /ask`` in turn, one keep-alive connection each, and ``GET /health``
on a new connection each time, all from 127.0.0.1) for ``--seconds`` in each round:

- **alone**: no other client;
- **slow, one address**: ``--slow`` connections from 127.0.0.2 that send one header line every
  ``--dribble`` seconds and never finish their request head;
- **slow, many addresses**: the same number of connections, each from its own address in
  127.0.1.0/24 and 127.0.2.0/24 (a spread-out attacker the per-address limit does not stop);
- **slow bodies, many addresses**: as many connections, each from its own address, that send a
  whole ``POST /ask`` head declaring a 100-byte body and then one byte of it every
  ``--dribble`` seconds (each takes a request slot once its head is read);
- **idle flood**: ``--idle`` connections that send nothing, spread over the 20 addresses
  127.0.0.2 to 127.0.0.21 (55 each at 1,100: under the per-address limit), more than the
  service's connection limit;
- **slow, loopback**: ``--slow`` slow heads from 127.0.0.1 itself, the address every local
  client and a local reverse proxy share;
- **big headers**: one connection after another sending a ``--big-header-mib`` MiB header.

Before the rounds it sends three heads over the 16 KiB limit, each in one write (a 17 KiB
header, a 60 KiB header, 2,000 headers), and prints what each got (431: refused).

The attackers run in their own process (they never take the honest client's interpreter) and
keep the attack up for the whole round: a slow connection the server cuts off or refuses is
opened again at the next dribble, a big header that is cut off is sent again at once. Each round
prints the honest client's share of requests answered 200, its p50 / p99 / max latency and
errors, the server's CPU time, the load average, and what the attackers got (408: cut off at the
head or body deadline; 431: head too large; 503: over a connection limit; closed, no reply: an
idle connection closed to make room). The last line is the verdict against the target: every
attacked round keeps the honest client's p99 under ``--target-ms`` with no errors, and every
oversized head is refused with 431.
"""

from __future__ import annotations

import argparse
import gc
import http.client
import json
import os
import selectors
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rag_pipeline.benchmarks.serve_load import HOST, free_port, percentile, process_cpu_seconds, wait_ready

SLOW_ADDRESS = "127.0.0.2"
IDLE_ADDRESSES = tuple(f"127.0.0.{n}" for n in range(2, 22))
"""The idle flood's 20 source addresses."""
TOPICS = ("timeouts", "caches", "exporters", "locks", "shells", "upgrades", "tokens", "queues")
TARGET_MS = 50.0
ATTACKS = ("slow", "spread", "body", "idle", "loopback", "big")
"""The attacks, in the order their rounds run."""
CLIENT_SIDE = ("health", "ask", "health, new conn.")
"""What the honest client saw; the verdict is on these."""


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


@dataclass
class Measured:
    """One endpoint's latencies (ms) and errors over a round."""

    latencies_ms: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)

    def success_rate(self) -> float:
        """The share of requests answered 200 (0 when none was sent)."""
        sent = len(self.latencies_ms) + sum(self.errors.values())
        return len(self.latencies_ms) / sent if sent else 0.0

    def line(self) -> str:
        errors = dict(self.errors) or 0
        if not self.latencies_ms:
            return f"    0 ok (  0.0 %)  errors {errors}"
        return (f"{len(self.latencies_ms):5d} ok ({100 * self.success_rate():5.1f} %)  p50 "
                f"{percentile(self.latencies_ms, 50):7.2f} ms  p99 "
                f"{percentile(self.latencies_ms, 99):7.2f} ms  max {max(self.latencies_ms):7.2f} ms  "
                f"errors {errors}")

    def holds(self, target_ms: float) -> bool:
        return bool(self.latencies_ms) and not self.errors and percentile(self.latencies_ms, 99) < target_ms


def measure(port: int, seconds: float) -> dict[str, Measured]:
    """``GET /health`` and ``POST /ask`` in turn for ``seconds``: latencies (ms) and errors, and
    the server's own time for each answer (``timings_ms.request``: validation to a JSON-ready
    answer; the rest of an ask's latency is HTTP, the event loop and waiting for a core)."""
    out = {"health": Measured(), "ask": Measured(), "health, new conn.": Measured(),
           "ask in the server": Measured()}
    conns = {name: http.client.HTTPConnection(HOST, port, timeout=30)
             for name in ("health", "ask", "health, new conn.")}
    deadline = time.monotonic() + seconds
    number = 0
    while time.monotonic() < deadline:
        for name, conn in conns.items():
            if name == "health, new conn.":
                conn.close()
            started = time.perf_counter()
            try:
                if name.startswith("health"):
                    conn.request("GET", "/health")
                else:
                    topic = TOPICS[number % len(TOPICS)]
                    conn.request("POST", "/ask", json.dumps({"question": f"how often are {topic} "
                                                             "checked"}),
                                 {"Content-Type": "application/json"})
                response = conn.getresponse()
                body = response.read()
                if response.status != 200:
                    out[name].errors[f"HTTP {response.status}"] += 1
                    continue
                out[name].latencies_ms.append((time.perf_counter() - started) * 1000)
                if name == "ask":
                    out["ask in the server"].latencies_ms.append(json.loads(body)["timings_ms"]["request"])
            except (OSError, http.client.HTTPException) as exc:
                out[name].errors[type(exc).__name__] += 1
                conn.close()
                conns[name] = http.client.HTTPConnection(HOST, port, timeout=30)
        number += 1
    for conn in conns.values():
        conn.close()
    return out


def slow_addresses(slow: int, spread: bool) -> list[str]:
    """The source address of each slow connection: all 127.0.0.2, or each its own from
    127.0.1.1 on (at most 508 connections)."""
    if not spread:
        return [SLOW_ADDRESS] * slow
    if slow > 508:
        raise SystemExit("error: --slow over 508 cannot each have its own address")
    return [f"127.0.{1 + n // 254}.{1 + n % 254}" for n in range(slow)]


def idle_addresses(count: int) -> list[str]:
    """The source address of each idle connection: :data:`IDLE_ADDRESSES` in turn."""
    return [IDLE_ADDRESSES[n % len(IDLE_ADDRESSES)] for n in range(count)]


def _status(reply: bytes) -> str:
    return reply.split(b" ", 2)[1].decode() if reply.startswith(b"HTTP/1.1 ") else "closed, no reply"


SLOW_HEAD = (b"POST /ask HTTP/1.1\r\nhost: x\r\n", b"x-slow: 1\r\n")
SLOW_BODY = (b"POST /ask HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
             b"content-length: 100\r\n\r\n{", b" ")
IDLE = (b"", b"")
"""What a slow connection sends first, then once a dribble: a head never ended, a whole head
and a body never ended, or nothing at all."""

OVERSIZED_HEADS = {
    "17 KiB header": b"GET /health HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * (17 << 10) + b"\r\n\r\n",
    "60 KiB header": b"GET /health HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * (60 << 10) + b"\r\n\r\n",
    "2,000 headers": b"GET /health HTTP/1.1\r\nhost: x\r\n"
                     + b"".join(b"x-h%d: v\r\n" % n for n in range(2000)) + b"\r\n",
}
"""Whole request heads over the 16 KiB limit, each sent in one write."""


def send_oversized_heads(port: int) -> dict[str, str]:
    """What each of :data:`OVERSIZED_HEADS` got, sent in one write on its own connection: the
    reply's status, or ``closed, no reply``."""
    out = {}
    for label, head in OVERSIZED_HEADS.items():
        with socket.create_connection((HOST, port), timeout=10) as conn:
            try:
                conn.sendall(head)
                reply = conn.recv(200)
            except OSError:
                reply = b""
        out[label] = _status(reply)
    return out


def hold_slow(port: int, addresses: list[str], dribble: float, seconds: float,
              sends: tuple[bytes, bytes] = SLOW_HEAD,
              on_ready: Callable[[], None] | None = None) -> Counter[str]:
    """Keeps one slow connection per address for ``seconds``: each sends ``sends[0]`` and then
    ``sends[1]`` every ``dribble`` seconds, never ending its request; one the server answers or
    closes is counted by its status and opened again at the next dribble. ``on_ready`` is called
    once every connection was tried once."""
    outcome: Counter[str] = Counter()
    selector = selectors.DefaultSelector()
    held: dict[int, str | None] = dict.fromkeys(range(len(addresses)))
    socks: dict[int, socket.socket] = {}

    def open_slot(slot: int) -> None:
        conn = socket.socket()
        conn.setblocking(True)
        conn.settimeout(1.0)
        try:
            conn.bind((addresses[slot], 0))
            conn.connect((HOST, port))
            conn.sendall(sends[0])
        except OSError:
            outcome["refused at connect"] += 1
            conn.close()
            return
        conn.setblocking(False)
        socks[slot] = conn
        selector.register(conn, selectors.EVENT_READ, slot)
        outcome["opened"] += 1

    def close_slot(slot: int, status: str) -> None:
        conn = socks.pop(slot)
        selector.unregister(conn)
        conn.close()
        outcome[status] += 1

    deadline = time.monotonic() + seconds
    next_dribble = time.monotonic()
    while time.monotonic() < deadline:
        now = time.monotonic()
        if now >= next_dribble:
            for slot in held:
                if slot not in socks:
                    open_slot(slot)
                    continue
                try:
                    socks[slot].send(sends[1])
                except OSError:
                    close_slot(slot, "closed, no reply")
            if on_ready is not None:
                on_ready()
                on_ready = None
            next_dribble = now + dribble
        for key, _ in selector.select(timeout=max(0.0, min(next_dribble, deadline) - time.monotonic())):
            slot = key.data
            try:
                reply = socks[slot].recv(200)
            except OSError:
                reply = b""
            close_slot(slot, _status(reply))
    outcome["held at the end"] = len(socks)
    for slot in list(socks):
        socks.pop(slot).close()
    return outcome


def send_big_headers(port: int, mib: int, seconds: float) -> Counter[str]:
    """Sends ``mib`` MiB headers one connection after another for ``seconds``; counts how far
    each got before the server cut it off."""
    outcome: Counter[str] = Counter()
    deadline = time.monotonic() + seconds
    chunk = b"a" * (1 << 20)
    while time.monotonic() < deadline:
        sent = 0
        try:
            with socket.create_connection((HOST, port), timeout=5) as conn:
                conn.sendall(b"GET /health HTTP/1.1\r\nhost: x\r\nx-big: ")
                while sent < mib << 20 and time.monotonic() < deadline:
                    conn.sendall(chunk)
                    sent += len(chunk)
                reply = b""
                try:
                    reply = conn.recv(200)
                except OSError:
                    pass
                outcome[f"sent whole {mib} MiB, then {_status(reply)}"] += 1
        except OSError:
            outcome[f"cut off after {sent >> 20} MiB or less"] += 1
        if sent >= mib << 20:
            break
    return outcome


def attacker_main(argv: list[str] | None = None) -> None:
    """The attacker process: ``ready`` once its connections are open, one attack for
    ``--seconds``, then its outcome as one JSON line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=ATTACKS)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--slow", type=int, default=300)
    parser.add_argument("--dribble", type=float, default=2.0)
    parser.add_argument("--mib", type=int, default=150)
    parser.add_argument("--seconds", type=float, required=True)
    args = parser.parse_args(argv)

    def ready() -> None:
        print("ready", flush=True)

    if args.kind == "big":
        ready()
        outcome = send_big_headers(args.port, args.mib, args.seconds)
    elif args.kind == "idle":
        outcome = hold_slow(args.port, idle_addresses(args.slow), args.dribble, args.seconds, IDLE,
                            ready)
    elif args.kind == "loopback":
        outcome = hold_slow(args.port, [HOST] * args.slow, args.dribble, args.seconds, SLOW_HEAD,
                            ready)
    else:
        outcome = hold_slow(args.port, slow_addresses(args.slow, args.kind != "slow"), args.dribble,
                            args.seconds, SLOW_BODY if args.kind == "body" else SLOW_HEAD, ready)
    print(json.dumps(dict(outcome)), flush=True)


def load_average() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def verdict(rounds: dict[str, dict[str, Measured]], target_ms: float,
            heads: dict[str, str] | None = None) -> str:
    """One line: whether every attacked round kept the honest client's p99 under ``target_ms``
    with no errors and every oversized head in ``heads`` got 431, which did not, and which of
    those rounds missed it with no attacker as well (the ``alone`` round: then the machine, not
    the attack, is over the target)."""
    failed = [f"{label} {name}" for label, measured in rounds.items() if label != "alone"
              for name, m in measured.items() if name in CLIENT_SIDE and not m.holds(target_ms)]
    failed += [f"{label} got {status}" for label, status in (heads or {}).items() if status != "431"]
    if not failed:
        return f"verdict: PASS: under every attack the honest client's p99 < {target_ms:g} ms, 0 errors"
    line = f"verdict: FAIL against p99 < {target_ms:g} ms with 0 errors: {', '.join(failed)}"
    alone = rounds.get("alone", {})
    over = [f"{name} p99 {percentile(alone[name].latencies_ms, 99):.1f} ms" for name in CLIENT_SIDE
            if name in alone and alone[name].latencies_ms and not alone[name].holds(target_ms)]
    if over:
        line += f" (with no attacker too: {', '.join(over)})"
    return line


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slow", type=int, default=300, help="Slow connections.")
    parser.add_argument("--dribble", type=float, default=2.0,
                        help="Seconds between two header lines of a slow connection.")
    parser.add_argument("--idle", type=int, default=1100,
                        help="Idle connections of the idle flood (over 20 addresses).")
    parser.add_argument("--big-header-mib", type=int, default=150)
    parser.add_argument("--seconds", type=float, default=20.0, help="Length of each round.")
    parser.add_argument("--target-ms", type=float, default=TARGET_MS)
    parser.add_argument("--rounds", default=",".join(ATTACKS),
                        help=f"The attacked rounds to run, of {','.join(ATTACKS)}.")
    parser.add_argument("--query-threads", type=int, default=None,
                        help="Passed to serve: ONNX Runtime threads for a question alone.")
    args = parser.parse_args(argv)
    chosen = args.rounds.split(",")
    if set(chosen) - set(ATTACKS):
        parser.error(f"--rounds: unknown {sorted(set(chosen) - set(ATTACKS))}")
    with tempfile.TemporaryDirectory(prefix="hostile-clients-") as tmp:
        data, corpus = Path(tmp) / "data", Path(tmp) / "corpus"
        write_corpus(corpus)
        build(data, corpus)
        # The model just used stays loaded here: a full collection over its objects would pause
        # the honest client (as it paused the server before serve froze its heap).
        gc.collect()
        gc.freeze()
        port = free_port()
        log = (Path(tmp) / "serve.log").open("w")
        server = subprocess.Popen(
            [sys.executable, "-c", "from rag_pipeline.cli import main; main()", "--data-dir",
             str(data), "serve", "--host", HOST, "--port", str(port), "--workers", "2",
             *([] if args.query_threads is None else ["--query-threads", str(args.query_threads)])],
            stdout=log, stderr=subprocess.STDOUT)
        attacks = {f"{args.slow} slow, one address": ["slow", "--slow", str(args.slow)],
                   f"{args.slow} slow, {args.slow} addresses": ["spread", "--slow", str(args.slow)],
                   f"{args.slow} slow bodies, {args.slow} addr.": ["body", "--slow", str(args.slow)],
                   f"{args.idle} idle, 20 addresses": ["idle", "--slow", str(args.idle)],
                   f"{args.slow} slow, 127.0.0.1": ["loopback", "--slow", str(args.slow)],
                   f"{args.big_header_mib} MiB headers": ["big", "--mib", str(args.big_header_mib)]}
        attacks = {label: attack for label, attack in attacks.items() if attack[0] in chosen}
        rounds: dict[str, dict[str, Measured]] = {}
        try:
            wait_ready(port, server)
            measure(port, 2.0)  # warm up
            heads = send_oversized_heads(port)
            for label, status in heads.items():
                print(f"{label + ' in one write':28s} got {status}")
            for label, attack in [("alone", None), *attacks.items()]:
                attacker = None
                if attack is not None:
                    attacker = subprocess.Popen(
                        [sys.executable, "-c", "from rag_pipeline.benchmarks.hostile_clients import "
                         "attacker_main; attacker_main()", *attack, "--port", str(port), "--dribble",
                         str(args.dribble), "--seconds", str(args.seconds + 2.0)],
                        stdout=subprocess.PIPE, text=True)
                    # The attack is in place before the honest client starts.
                    if attacker.stdout.readline().strip() != "ready":
                        raise SystemExit(f"the {label} attacker did not start")
                cpu = process_cpu_seconds(server.pid)
                rounds[label] = measure(port, args.seconds)
                cpu = process_cpu_seconds(server.pid) - cpu
                got = ""
                if attacker is not None:
                    out, _ = attacker.communicate(timeout=args.seconds + 60)
                    got = "; attackers got " + ", ".join(
                        f"{k}: {v}" for k, v in sorted(json.loads(out.strip().splitlines()[-1]).items()))
                for name, measured in rounds[label].items():
                    print(f"{label:28s} {name:17s} {measured.line()}")
                print(f"{'':28s} server CPU {cpu:.2f} s in {args.seconds:g} s, {load_average()}{got}",
                      flush=True)
            print(verdict(rounds, args.target_ms, heads))
        finally:
            server.terminate()
            server.wait(timeout=30)
            log.close()


if __name__ == "__main__":
    main()
