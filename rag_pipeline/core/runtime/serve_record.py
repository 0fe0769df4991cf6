"""The address of a running ``serve``, recorded in its data folder so ``ask`` can use it.

``serve`` writes ``<data folder>/serve.json`` once it listens and removes it when it stops;
``ask`` reads it and, when the service serves the partition asked for from the same tables, sends the question
there (a few milliseconds) instead of loading the model (seconds). A record left by a killed
service names a dead process and is ignored.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

SERVE_RECORD = "serve.json"


@dataclass(frozen=True)
class ServeRecord:
    """Where a ``serve`` listens and what it answers with.

    Attributes:
        host: The interface it listens on (``0.0.0.0`` / ``::`` are reached via loopback).
        port: Its port.
        pid: Its process id.
        chunker: The chunker partition it serves.
        model_key: The model key it serves.
        base_url: The ``--base-url`` its citations use (None: file URIs).
        location: Where the tables it serves live (``Warehouse.location``: a folder or an
            object-store URI); None in a record that names none, which matches no ``ask``.
    """

    host: str
    port: int
    pid: int
    chunker: str
    model_key: str
    base_url: str | None = None
    location: str | None = None

    def url(self, path: str) -> str:
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.host, self.host)
        return f"http://{f'[{host}]' if ':' in host else host}:{self.port}{path}"


def write_serve_record(data_dir: Path, record: ServeRecord) -> Path:
    """Writes the record (temp file + rename); returns its path."""
    path = Path(data_dir) / SERVE_RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(record)), encoding="utf-8")
    tmp.replace(path)
    return path


def read_serve_record(data_dir: Path) -> ServeRecord | None:
    """The record of a service whose process is alive, else None (none, malformed, or dead)."""
    path = Path(data_dir) / SERVE_RECORD
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        record = ServeRecord(str(data["host"]), int(data["port"]), int(data["pid"]),
                             str(data["chunker"]), str(data["model_key"]), data.get("base_url"),
                             data.get("location"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(record.pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return record


def remove_serve_record(data_dir: Path, pid: int) -> None:
    """Removes the record if it is still the one process ``pid`` wrote."""
    path = Path(data_dir) / SERVE_RECORD
    try:
        if json.loads(path.read_text(encoding="utf-8")).get("pid") == pid:
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass


CONNECT_TIMEOUT = 0.25
"""Seconds ``ask`` waits to connect to a recorded service before loading the model itself."""


class ServeRefusedError(Exception):
    """The running service refused the request's credentials (a 401): its one-line reason."""


def ask_running(record: ServeRecord, params: dict[str, str], connect_timeout: float = CONNECT_TIMEOUT,
                read_timeout: float = 60.0, token: str | None = None) -> dict | None:
    """``GET /ask`` on the recorded service (with ``Authorization: Bearer token`` when a token is
    given); the answer's JSON, or None when it cannot be reached in ``connect_timeout`` or does
    not answer 200 (the caller then answers itself).

    Raises:
        ServeRefusedError: The service answered 401 to a request that carried a token.
    """
    import http.client
    from urllib.parse import urlencode, urlsplit

    url = urlsplit(record.url("/ask?" + urlencode(params)))
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=connect_timeout)
    try:
        connection.connect()
        connection.sock.settimeout(read_timeout)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        connection.request("GET", f"{url.path}?{url.query}", headers=headers)
        response = connection.getresponse()
        body = response.read()
        if response.status == 401 and token:
            raise ServeRefusedError(str(json.loads(body).get("error", "unauthorized")))
        return json.loads(body) if response.status == 200 else None
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        connection.close()
