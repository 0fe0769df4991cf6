"""The address of a running ``serve``, recorded in its data folder so ``ask`` can use it.

``serve`` writes ``<data folder>/serve.json`` once it listens and removes it when it stops (or
puts back the record of another ``serve`` of the folder it replaced, while that one runs);
``ask`` reads it and, when the service serves the partition asked for from the same tables, sends the question
there (a few milliseconds) instead of loading the model (seconds). A record left by a killed
service names a dead process and is ignored.

Any process may listen on a recorded port once the service is gone (or write a record of its
own where the data folder is writable), so the record also holds a secret, readable by its
owner alone (mode 0600): ``ask`` sends a fresh nonce with its question and takes the answer
only with :func:`serve_proof` of that nonce under the secret.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

SERVE_RECORD = "serve.json"
NONCE_HEADER = "x-rag-serve-nonce"
PROOF_HEADER = "x-rag-serve-proof"
MAX_NONCE_CHARS = 128


def new_secret() -> str:
    """A fresh secret for one ``serve`` (32 random bytes, hex)."""
    return secrets.token_hex(32)


def serve_proof(secret: str, nonce: str) -> str:
    """HMAC-SHA256 of ``nonce`` under ``secret`` (RFC 2104), hex: what the service answers to
    prove it holds the record's secret."""
    return hmac.new(secret.encode("ascii"), nonce.encode("utf-8", "replace"),
                    hashlib.sha256).hexdigest()


class UnprovenServeError(Exception):
    """The process at the recorded address did not prove it holds the record's secret."""


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
        secret: What the service proves it holds (:func:`serve_proof`); None in a record that
            holds none, which no ``ask`` trusts.
    """

    host: str
    port: int
    pid: int
    chunker: str
    model_key: str
    base_url: str | None = None
    location: str | None = None
    secret: str | None = None

    def url(self, path: str) -> str:
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.host, self.host)
        return f"http://{f'[{host}]' if ':' in host else host}:{self.port}{path}"


def write_serve_record(data_dir: Path, record: ServeRecord) -> Path:
    """Writes the record, readable and writable by its owner alone (temp file + rename);
    returns its path."""
    path = Path(data_dir) / SERVE_RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(asdict(record)))
    tmp.replace(path)
    return path


def read_serve_record(data_dir: Path) -> ServeRecord | None:
    """The record of a service whose process is alive, else None (none, malformed, or dead)."""
    path = Path(data_dir) / SERVE_RECORD
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        record = ServeRecord(str(data["host"]), int(data["port"]), int(data["pid"]),
                             str(data["chunker"]), str(data["model_key"]), data.get("base_url"),
                             data.get("location"), data.get("secret"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return record if _alive(record.pid) else None


def remove_serve_record(data_dir: Path, pid: int, earlier: ServeRecord | None = None) -> None:
    """Removes the record if it is still the one process ``pid`` wrote; puts ``earlier`` back
    instead (the record this one replaced: another ``serve`` of the same data folder) while
    its process is alive, so stopping the second service leaves the first one found."""
    path = Path(data_dir) / SERVE_RECORD
    try:
        if json.loads(path.read_text(encoding="utf-8")).get("pid") != pid:
            return
        if earlier is not None and earlier.pid != pid and _alive(earlier.pid):
            write_serve_record(data_dir, earlier)
        else:
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


CONNECT_TIMEOUT = 0.25
"""Seconds ``ask`` waits to connect to a recorded service before loading the model itself."""
ANSWER_TIMEOUT = 15.0
"""Seconds ``ask`` waits for a connected service's answer (it retrieves and quotes, never
generates: well under a second when it is well) before answering itself."""


class ServeRefusedError(Exception):
    """The running service refused the request's credentials (a 401): its one-line reason."""


class ServeSilentError(Exception):
    """The running service took the connection but sent no answer in time (stopped, or
    stuck)."""


def ask_running(record: ServeRecord, params: dict[str, str], connect_timeout: float = CONNECT_TIMEOUT,
                read_timeout: float = ANSWER_TIMEOUT, token: str | None = None) -> dict | None:
    """``GET /ask`` on the recorded service (with ``Authorization: Bearer token`` when a token is
    given); the answer's JSON, or None when it cannot be reached in ``connect_timeout`` or does
    not answer 200 (the caller then answers itself).

    Raises:
        UnprovenServeError: If the record holds no secret, or the process that answered did
            not send :func:`serve_proof` of this request's nonce (its answer is dropped).
        ServeRefusedError: The proven service answered 401 (the request carried no token, or
            one it refused).
        ServeSilentError: It connected, then sent no answer in ``read_timeout`` seconds.
    """
    import http.client
    from urllib.parse import urlencode, urlsplit

    if not record.secret:
        raise UnprovenServeError(f"{SERVE_RECORD} holds no secret")
    url = urlsplit(record.url("/ask?" + urlencode(params)))
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=connect_timeout)

    def proven_get(path: str, headers: dict[str, str]) -> tuple[int, bytes]:
        nonce = secrets.token_hex(16)
        connection.request("GET", path, headers={NONCE_HEADER: nonce, **headers})
        response = connection.getresponse()
        body = response.read()
        proof = response.getheader(PROOF_HEADER) or ""
        if not hmac.compare_digest(proof, serve_proof(record.secret, nonce)):
            raise UnprovenServeError("its answer carries no proof of the secret in "
                                     f"{SERVE_RECORD}")
        return response.status, body

    try:
        connection.connect()
        connection.sock.settimeout(read_timeout)
        headers = {}
        if token:
            # The token goes only to a listener that has proven the secret, on the connection
            # it proved it on (never reopened): a process squatting on the recorded port gets
            # no token.
            proven_get("/health", {})
            connection.auto_open = 0
            headers["Authorization"] = f"Bearer {token}"
        status, body = proven_get(f"{url.path}?{url.query}", headers)
        if status == 401:
            raise ServeRefusedError(str(json.loads(body).get("error", "unauthorized")))
        return json.loads(body) if status == 200 else None
    except TimeoutError as exc:
        if connection.sock is None:
            return None
        raise ServeSilentError(f"no answer in {read_timeout:g} s") from exc
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        connection.close()
