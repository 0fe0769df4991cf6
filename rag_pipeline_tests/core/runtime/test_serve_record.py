"""Tests for ``rag_pipeline.core.runtime.serve_record``: a record is removed by the process that
wrote it, and the record of another live ``serve`` it replaced is put back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rag_pipeline.core.runtime.serve_record import (
    NONCE_HEADER,
    PROOF_HEADER,
    ServeRecord,
    ServeSilentError,
    UnprovenServeError,
    ask_running,
    read_serve_record,
    remove_serve_record,
    serve_proof,
    write_serve_record,
)


def _record(pid: int, port: int) -> ServeRecord:
    return ServeRecord("127.0.0.1", port, pid, "header", "m@00000000", None, "/data", "s" * 64)


def test_stopping_a_second_serve_puts_the_first_ones_record_back(tmp_path: Path):
    # Found by an attacker: stopping a second serve of the folder left the first unfound.
    first = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        earlier = _record(first.pid, 8001)
        write_serve_record(tmp_path, earlier)
        replaced = read_serve_record(tmp_path)
        write_serve_record(tmp_path, _record(os.getpid(), 8002))
        remove_serve_record(tmp_path, os.getpid(), replaced)
        assert read_serve_record(tmp_path) == earlier
        assert (tmp_path / "serve.json").stat().st_mode & 0o777 == 0o600
        # The first stops too: its record goes, with nothing to put back.
        remove_serve_record(tmp_path, first.pid)
        assert not (tmp_path / "serve.json").exists()
    finally:
        first.kill()
        first.wait()


def test_a_replaced_record_whose_serve_is_gone_is_not_put_back(tmp_path: Path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    write_serve_record(tmp_path, _record(os.getpid(), 8002))
    remove_serve_record(tmp_path, os.getpid(), _record(gone.pid, 8001))
    assert not (tmp_path / "serve.json").exists()


def test_a_record_another_process_wrote_since_is_left_alone(tmp_path: Path):
    later = _record(os.getpid(), 8003)
    write_serve_record(tmp_path, later)
    remove_serve_record(tmp_path, os.getpid() + 1_000_000)
    assert read_serve_record(tmp_path) == later


def _listener(prove: bool, seen: list[tuple[str, str | None, int]]):
    """A keep-alive HTTP server recording each request's path, Authorization header and client
    port; it proves the record's secret when ``prove``."""
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            seen.append((self.path.split("?")[0], self.headers.get("Authorization"),
                         self.client_address[1]))
            nonce = self.headers.get(NONCE_HEADER, "")
            body = b'{"answer": "ok"}'
            self.send_response(200)
            self.send_header(PROOF_HEADER, serve_proof("s" * 64, nonce) if prove else "0" * 64)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    return http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)


def test_a_token_goes_only_to_a_listener_that_proved_the_secret_on_that_connection():
    """The token rode on the request the proof was asked on: a program squatting on the
    recorded port got it (found by an attack's reading)."""
    import threading

    token = "rp_12345678_" + "t" * 43
    for prove in (False, True):
        seen: list[tuple[str, str | None, int]] = []
        with _listener(prove, seen) as server:
            threading.Thread(target=server.serve_forever, daemon=True).start()
            record = _record(os.getpid(), server.server_address[1])
            try:
                answer = ask_running(record, {"q": "x"}, token=token)
            except UnprovenServeError:
                answer = None
            server.shutdown()
        if prove:
            assert answer == {"answer": "ok"}
            assert [(path, auth) for path, auth, _ in seen] == [("/health", None),
                                                               ("/ask", f"Bearer {token}")]
            assert seen[0][2] == seen[1][2]  # one connection
        else:
            assert (answer, seen) == (None, [("/health", None, seen[0][2])])


def test_a_service_that_takes_the_question_and_never_answers_is_told_apart_from_none():
    """Found by a new team: with serve stopped (SIGSTOP), ``ask`` waited 62.5 s, then answered
    itself without a word; the connection is made by the kernel, so only the answer's wait
    tells."""
    import socket
    import time

    import pytest

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        record = _record(os.getpid(), listener.getsockname()[1])
        started = time.monotonic()
        with pytest.raises(ServeSilentError, match=r"^no answer in 0\.5 s$"):
            ask_running(record, {"q": "x"}, read_timeout=0.5)
        assert time.monotonic() - started < 5
    # Nothing listens on the port any more: no answer, at once.
    assert ask_running(record, {"q": "x"}, read_timeout=0.5) is None
