"""``serve`` records its address in the data folder while it runs and removes the record when
SIGTERM stops it (uvicorn re-raises the signal after its graceful shutdown), or SIGHUP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

SERVER = """
import sys
from pathlib import Path
import rag_pipeline.service.run as run
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.service.query_service import ServeSettings
from rag_pipeline_tests.core.index_builder import DUPLICATED_DOCS, build_index
from rag_pipeline_tests.fake_embedder import HashedEmbedder

embedder = HashedEmbedder()
docs = dict(DUPLICATED_DOCS)
if len(sys.argv) > 2:  # a page whose file is large: a download a client can stall
    docs["big.html"] = "<html><body><p>A big page.</p><!-- " + "x" * int(sys.argv[2]) + " --></body></html>"
built = build_index(Path(sys.argv[1]), embedder, docs)
if len(sys.argv) > 3:  # a view that takes a minute: a request still running past the grace
    import time
    import rag_pipeline.service.page_routes as routes
    routes.render_document = lambda *args, **kwargs: time.sleep(60)
run.load_service_model = lambda *args, **kwargs: embedder   # the hashed stand-in, no torch
run.pin_threads = lambda: None
run.serve_forever(Warehouse(built.data_dir), embedder.spec, ServeSettings("header", embedder.spec.key),
                  host="127.0.0.1", port=0, poll_seconds=3600, access_log=False, echo=print)
"""


def _started(tmp_path: Path, *arguments: str) -> tuple[subprocess.Popen, Path]:
    """The server of :data:`SERVER` and its record, once written."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(tmp_path), *arguments], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    records = list(tmp_path.rglob("serve.json"))
    deadline = time.monotonic() + 120
    while not records and server.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
        records = list(tmp_path.rglob("serve.json"))
    assert records, server.communicate(timeout=10)[0] if server.poll() is not None else ""
    return server, records[0]


def test_serve_writes_its_record_and_removes_it_on_sigterm(tmp_path: Path):
    server, path = _started(tmp_path)
    try:
        record = json.loads(path.read_text())
        assert (record["host"], record["pid"], record["chunker"], record["base_url"],
                record["location"]) == ("127.0.0.1", server.pid, "header", None,
                                        str(tmp_path / "data" / "warehouse"))
        assert record["port"] > 0
        _get(f"http://127.0.0.1:{record['port']}/ask?q=alpha")  # its side threads now idle
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 128 + signal.SIGTERM
        assert not path.exists()
        # Found by a new user: an idle side thread was reported as work cut off.
        assert "work still running" not in server.stdout.read()
    finally:
        _killed(server)

def test_a_closed_terminal_stops_serve_as_sigterm_does(tmp_path: Path):
    """Found by an operator whose SSH session ended: SIGHUP killed serve at once, its record
    left behind for `ask` to find."""
    server, path = _started(tmp_path)
    try:
        server.send_signal(signal.SIGHUP)
        assert server.wait(timeout=60) == 128 + signal.SIGHUP
        assert not path.exists()
    finally:
        _killed(server)


def test_serve_stops_within_its_grace_while_a_client_stalls_a_download(tmp_path: Path):
    """Found by an attack: with three downloads of a large original that their clients stopped
    reading, serve was still running 40 s after SIGTERM, and 20 s after a second one."""
    import socket

    server, record = _started(tmp_path, str(12_000_000))
    clients = []
    try:
        port = json.loads(record.read_text())["port"]
        for _ in range(3):
            client = socket.socket()
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            client.connect(("127.0.0.1", port))
            client.sendall(b"GET /originals/big.html HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            clients.append(client)
        client.recv(1)  # the responses have begun; nothing more is read
        time.sleep(1)
        _stopped_within_its_grace(server, record)
    finally:
        for client in clients:
            client.close()
        _killed(server)


def test_serve_stops_within_its_grace_while_a_view_is_still_working(tmp_path: Path):
    """Found by an attack: a view computing in a worker thread kept serve alive 40 s after
    SIGTERM (its grace ends the connections, not the thread), with a 74-line traceback."""
    server, record = _started(tmp_path, "10", "slow")
    try:
        port = json.loads(record.read_text())["port"]
        threading.Thread(target=lambda: _get(f"http://127.0.0.1:{port}/documents/big.html"),
                         daemon=True).start()
        time.sleep(2)
        _stopped_within_its_grace(server, record)
        said = server.stdout.read()
        assert "Traceback" not in said
        assert "stopped: work still running in 1 thread(s) past the 10 s grace was cut off" in said
    finally:
        _killed(server)


def _stopped_within_its_grace(server: subprocess.Popen, record: Path) -> None:
    """Sends ``server`` SIGTERM: it exits 143 within its grace and 10 s, its record removed."""
    from rag_pipeline.service.run import SHUTDOWN_GRACE_SECONDS

    signalled = time.monotonic()
    server.send_signal(signal.SIGTERM)
    assert server.wait(timeout=SHUTDOWN_GRACE_SECONDS + 60) == 128 + signal.SIGTERM
    assert time.monotonic() - signalled < SHUTDOWN_GRACE_SECONDS + 10
    assert not record.exists()


def _killed(server: subprocess.Popen) -> None:
    """Kills what is left of ``server``'s process group."""
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def _get(url: str) -> None:
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(url, timeout=120).read()
    except (urllib.error.URLError, OSError):
        pass
