"""An S3 prefix as a corpus (AWS, MinIO, moto): ``s3://bucket/prefix``.

A document's id is its key below the prefix; its fingerprint is the ETag with the size, as the
listing returns them, so an unchanged object is never downloaded. An object is read with
``If-Match`` on the listed ETag: one replaced after the listing fails alone ("changed while
being read") rather than mixing two versions into one run. Credentials and the endpoint are
:class:`S3Settings`, which the edge fills from the standard AWS variables; nothing here reads
the environment. The client is boto3's, with bounded retries and timeouts, so an unreachable
endpoint fails the run in seconds with one line.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from rag_pipeline.core.ingest.extracted import ExtractionError
from rag_pipeline.core.ingest.reading import STORE_REFUSED
from rag_pipeline.core.ingest.sources.base import (
    Entry,
    SourceError,
    hidden_top,
    shown_key,
    unsafe_key_reason,
)

BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
"""S3's rule for a bucket name: 3 to 63 lower-case letters, digits, dots and hyphens."""
MAX_ATTEMPTS = 3
CONNECT_TIMEOUT_SECONDS = 3
READ_TIMEOUT_SECONDS = 10
"""Per read of a socket (not per object): an endpoint that accepts connections and never
answers fails the run after about half a minute (:data:`MAX_ATTEMPTS` tries)."""
PREFETCH_THREADS = 8
PREFETCH_WINDOW = 16
"""Objects downloading or downloaded ahead of the reader: at most this many times the size
limit in memory."""
_REFUSED = {"InvalidAccessKeyId": "the access key is not known to the endpoint",
            "SignatureDoesNotMatch": "the secret key does not match the access key",
            "AccessDenied": "access denied", "ExpiredToken": "the session token expired",
            "InvalidToken": "the session token is not valid"}


@dataclass(frozen=True)
class S3Settings:
    """How to reach the object store: the standard AWS settings, read at the edge.

    Attributes:
        endpoint_url: Another endpoint than AWS's (``AWS_ENDPOINT_URL``: MinIO, moto).
        region: ``AWS_REGION`` / ``AWS_DEFAULT_REGION``.
        access_key_id: ``AWS_ACCESS_KEY_ID`` (``None``: boto3's own chain, e.g. a role).
        secret_access_key: ``AWS_SECRET_ACCESS_KEY``.
        session_token: ``AWS_SESSION_TOKEN``.
    """

    endpoint_url: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None

    @classmethod
    def from_environment(cls, environ: Any) -> S3Settings:
        """The settings the standard variables of ``environ`` (a mapping) name."""
        return cls(endpoint_url=environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL"),
                   region=environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION"),
                   access_key_id=environ.get("AWS_ACCESS_KEY_ID"),
                   secret_access_key=environ.get("AWS_SECRET_ACCESS_KEY"),
                   session_token=environ.get("AWS_SESSION_TOKEN"))


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """``(bucket, prefix)`` of ``s3://bucket/prefix`` (the prefix ends with ``/`` unless it is
    empty).

    Raises:
        SourceError: If the bucket name is not one S3 allows or the prefix is unsafe.
    """
    rest = uri.removeprefix("s3://")
    bucket, _, prefix = rest.partition("/")
    if BUCKET_NAME.fullmatch(bucket) is None:
        raise SourceError(f"{uri}: {bucket!r} is not a bucket name (3 to 63 lower-case letters, "
                          "digits, '.' and '-')")
    prefix = prefix.strip("/")
    if prefix and (unsafe := unsafe_key_reason(prefix, kind="prefix")) is not None:
        raise SourceError(f"{uri}: {unsafe}")
    return bucket, f"{prefix}/" if prefix else ""


class S3Source:
    """The objects below ``s3://bucket/prefix``."""

    content_addressed = True

    def __init__(self, uri: str, settings: S3Settings | None = None) -> None:
        self.uri = uri.rstrip("/")
        self.bucket, self.prefix = parse_s3_uri(uri)
        self.settings = settings or S3Settings()
        self._client: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self._ahead: deque[Entry] = deque()
        self._ahead_limit = 0
        self._fetching: dict[str, Future] = {}
        self.hidden: tuple[str, ...] = ()
        self.listed = 0
        """Objects the last listing returned (folder markers and hidden names too)."""

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3
            import botocore.session
            from botocore.config import Config

            s = self.settings
            core = botocore.session.get_session()
            # The listing's LastModified is never used: kept as text, a 10,000-key listing
            # parses in a third of the time (dateutil parsed each timestamp).
            core.get_component("response_parser_factory").set_parser_defaults(
                timestamp_parser=str)
            self._client = boto3.session.Session(botocore_session=core).client(
                "s3", endpoint_url=s.endpoint_url, region_name=s.region or "us-east-1",
                aws_access_key_id=s.access_key_id, aws_secret_access_key=s.secret_access_key,
                aws_session_token=s.session_token,
                config=Config(retries={"total_max_attempts": MAX_ATTEMPTS, "mode": "standard"},
                              connect_timeout=CONNECT_TIMEOUT_SECONDS,
                              read_timeout=READ_TIMEOUT_SECONDS))
        return self._client

    def _where(self) -> str:
        return f"{self.uri}" + (f" at {self.settings.endpoint_url}" if self.settings.endpoint_url else "")

    def source_error(self, exc: Exception) -> SourceError:
        """One line for a failure of the whole source: the bucket, the credentials, the
        endpoint."""
        from botocore.exceptions import ClientError, NoCredentialsError

        if isinstance(exc, ClientError):
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "NoSuchBucket":
                return SourceError(f"{self._where()}: the bucket {self.bucket!r} does not exist")
            if code in _REFUSED:
                return SourceError(f"{self._where()}: credentials refused ({_REFUSED[code]}; "
                                   "set AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)")
            return SourceError(f"{self._where()}: {code or 'error'}: "
                               f"{exc.response.get('Error', {}).get('Message', exc)}")
        if isinstance(exc, NoCredentialsError):
            return SourceError(f"{self._where()}: no credentials (set AWS_ACCESS_KEY_ID and "
                               "AWS_SECRET_ACCESS_KEY)")
        return SourceError(f"{self._where()}: cannot reach the endpoint after {MAX_ATTEMPTS} "
                           f"attempts ({type(exc).__name__}: {exc})")

    def _listing(self) -> list[dict]:
        from botocore.exceptions import BotoCoreError, ClientError

        objects = []
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self.prefix)
            for page in pages:
                objects.extend(page.get("Contents", ()))
        except (BotoCoreError, ClientError) as exc:
            raise self.source_error(exc) from exc
        return objects

    def entries(self) -> list[Entry]:
        out = []
        hidden = set()
        listing = self._listing()
        self.listed = len(listing)
        if not listing and self.prefix:
            self._refuse_an_object()
        for obj in listing:
            key = obj["Key"][len(self.prefix):]
            fingerprint = f"etag:{obj['ETag'].strip(chr(34))}:{obj['Size']}"
            if not key and obj["Size"]:
                out.append(Entry("/", fingerprint, obj["Size"], refused=(
                    f"the key {shown_key(obj['Key'])} is the prefix itself, holding bytes (an "
                    "object named like the corpus's folder): refused; rename it without the '/'")))
                continue
            if not key or key.endswith("/") and (not obj["Size"] or hidden_top(key.rstrip("/"))):
                # the prefix's or a folder's marker (a hidden one named, with bytes or not)
                if (top := hidden_top(key.rstrip("/"))) is not None:
                    hidden.add(top)
                continue
            refused = unsafe_key_reason(key)
            if refused is not None:
                out.append(Entry(shown_key(key), fingerprint,
                                 obj["Size"], refused=refused))
            elif (top := hidden_top(key)) is not None:
                hidden.add(top)
            else:
                out.append(Entry(key, fingerprint, obj["Size"]))
        self.hidden = tuple(sorted(hidden))
        return sorted(out, key=lambda e: e.document_id)

    def prefetch(self, entries: list[Entry], max_bytes: int) -> None:
        """Downloads the entries about to be read on :data:`PREFETCH_THREADS` threads, at most
        :data:`PREFETCH_WINDOW` ahead of the reader (so memory stays bounded); a first index of
        many small objects waits on latency, not bandwidth."""
        self._close_pool()
        if not entries:
            return
        _ = self.client  # created once, before the threads share it (boto3 clients are thread-safe)
        self._pool = ThreadPoolExecutor(PREFETCH_THREADS, thread_name_prefix="s3-prefetch")
        self._ahead = deque(entries)
        self._ahead_limit = max_bytes
        self._top_up()

    def _top_up(self) -> None:
        while self._pool is not None and self._ahead and len(self._fetching) < PREFETCH_WINDOW:
            entry = self._ahead.popleft()
            self._fetching[entry.document_id] = self._pool.submit(self._fetch, entry,
                                                                  self._ahead_limit)

    def read(self, entry: Entry, max_bytes: int) -> bytes:
        future = self._fetching.pop(entry.document_id, None)
        if future is None or max_bytes != self._ahead_limit:
            return self._fetch(entry, max_bytes)
        try:
            return future.result()
        finally:
            self._top_up()

    def _fetch(self, entry: Entry, max_bytes: int) -> bytes:
        from botocore.exceptions import BotoCoreError, ClientError

        if entry.size is not None and entry.size > max_bytes:
            raise ExtractionError(f"too large: {entry.size} bytes, over the limit of {max_bytes} "
                                  "bytes per document (max_document_bytes)")
        etag = entry.fingerprint.split(":")[1]
        try:
            data = self._get(self.prefix + entry.document_id, etag, max_bytes + 1)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in ("NoSuchKey", "404"):
                raise ExtractionError("deleted while being read: the object is gone") from exc
            if code in ("PreconditionFailed", "412"):
                raise ExtractionError("changed while being read: the object was replaced after "
                                      "the listing") from exc
            if code == "NoSuchBucket" or (code in _REFUSED and code != "AccessDenied"):
                raise self.source_error(exc) from exc
            message = " ".join(str(exc.response.get("Error", {}).get("Message", "")).split())
            raise ExtractionError(f"{STORE_REFUSED}: {code or 'error'}"
                                  + (f": {message}" if message else "")
                                  + " (the next run tries again)") from exc
        except BotoCoreError as exc:
            raise self.source_error(exc) from exc
        if len(data) > max_bytes:
            raise ExtractionError(f"too large: over the limit of {max_bytes} bytes per document "
                                  "(max_document_bytes)")
        return data

    def _get(self, key: str, etag: str, limit: int) -> bytes:
        """At most ``limit`` bytes of the object ``key`` as listed (``etag``). A body cut off
        on its way (the connection dropped after the headers: botocore's own retries end with
        the headers) is asked for again, :data:`MAX_ATTEMPTS` times in all; then the source
        fails, saying so."""
        from botocore.exceptions import ConnectionClosedError, IncompleteReadError, ResponseStreamingError

        attempt = 1
        while True:
            response = self.client.get_object(Bucket=self.bucket, Key=key, IfMatch=f'"{etag}"')
            try:
                return response["Body"].read(limit)
            except (IncompleteReadError, ResponseStreamingError, ConnectionClosedError) as exc:
                if attempt == MAX_ATTEMPTS:
                    raise SourceError(f"{self._where()}: the connection dropped while {key!r} was "
                                      f"read, {MAX_ATTEMPTS} times ({type(exc).__name__}: {exc})"
                                      ) from exc
            time.sleep(0.5 * attempt)
            attempt += 1

    def location(self, document_id: str) -> str:
        return f"s3://{self.bucket}/{self.prefix}{document_id}"

    def revision(self) -> str | None:
        return None

    def watch_token(self) -> str:
        """Digest of the listing's keys, ETags and sizes: one ``ListObjectsV2`` per 1,000
        objects, nothing downloaded.

        Raises:
            SourceError: If the bucket cannot be listed.
        """
        digest = hashlib.sha256()
        for obj in self._listing():
            digest.update(f"{obj['Key']}\0{obj['ETag']}\0{obj['Size']}\n".encode())
        return digest.hexdigest()[:16]

    def _refuse_an_object(self) -> None:
        """Nothing below the prefix: when the prefix names an object, says so (a corpus is the
        objects below a prefix, and the prefix ``key/`` holds none); else an empty prefix is an
        empty corpus, which the run's guards report.

        Raises:
            SourceError: If the prefix is an object's key.
        """
        from botocore.exceptions import BotoCoreError, ClientError

        key = self.prefix.rstrip("/")
        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError:
            return  # no such object (404) or not allowed to ask: an empty prefix
        except BotoCoreError as exc:
            raise self.source_error(exc) from exc
        folder = key.rpartition("/")[0]
        raise SourceError(f"{self._where()}: names an object, not a prefix of objects: name the "
                          f"prefix it is in (s3://{self.bucket}/{folder})")

    def still_there(self) -> None:
        """Raises when the listing held objects and the prefix holds none now (a prefix empty
        from the start is an empty corpus, not one that emptied)."""
        from botocore.exceptions import BotoCoreError, ClientError

        if not self.listed:
            return
        try:
            found = self.client.list_objects_v2(Bucket=self.bucket, Prefix=self.prefix,
                                                MaxKeys=1).get("KeyCount", 0)
        except (BotoCoreError, ClientError) as exc:
            raise self.source_error(exc) from exc
        if not found:
            raise SourceError(f"{self._where()}: the prefix emptied while it was being read: "
                              "nothing is published, the served index is as it was")

    def _close_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool, self._ahead, self._fetching = None, deque(), {}

    def close(self) -> None:
        self._close_pool()
