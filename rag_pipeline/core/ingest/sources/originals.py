"""A document's original bytes read again from the source it was indexed from, for a view:
the object at ``s3://bucket/key``, or the blob at ``git+<url>@<commit>:<path>`` (the locations
:meth:`~.s3.S3Source.location` and :meth:`~.git.GitSource.location` write). The caller checks
the bytes against the sha256 the index recorded; nothing here decides what they are."""

from __future__ import annotations

import functools
import re
import subprocess

from rag_pipeline.core.ingest.sources.base import SourceError
from rag_pipeline.core.ingest.sources.git import GitSource
from rag_pipeline.core.ingest.sources.s3 import S3Source

__all__ = ["read_original"]

GIT_LOCATION = re.compile(r"(?P<uri>git\+.+)@(?P<commit>[0-9a-f]{40}(?:[0-9a-f]{24})?):(?P<path>.+)",
                          re.S)
GIT_READ_SECONDS = 30


def read_original(location: str, max_bytes: int, settings) -> bytes:
    """The bytes at ``location`` (an ``s3://`` or ``git+`` location), at most ``max_bytes``.

    Args:
        settings: A :class:`~rag_pipeline.core.ingest.sources.SourceSettings`: the object
            store's settings, and the folder remote repositories are mirrored in.

    Raises:
        SourceError: With why it cannot be read: no such object or blob (any more), a file
            larger than ``max_bytes``, the endpoint or repository unreachable.
    """
    if location.startswith("s3://"):
        return _s3_object(location, max_bytes, settings)
    found = GIT_LOCATION.fullmatch(location)
    if found is None:
        raise SourceError(f"{location}: not an s3:// or git+ location of a document")
    return _git_blob(found["uri"], found["commit"], found["path"], max_bytes, settings)


def _s3_object(location: str, max_bytes: int, settings) -> bytes:
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, _, key = location.removeprefix("s3://").partition("/")
    source = _bucket(bucket, settings.s3)
    try:
        response = source.client.get_object(Bucket=bucket, Key=key)
        data = response["Body"].read(max_bytes + 1)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code", "") in ("NoSuchKey", "404"):
            raise SourceError(f"{location}: the object is gone") from exc
        raise source.source_error(exc) from exc
    except BotoCoreError as exc:
        raise source.source_error(exc) from exc
    if len(data) > max_bytes:
        raise SourceError(f"{location}: over {max_bytes} bytes")
    return data


@functools.lru_cache(maxsize=16)
def _bucket(bucket: str, settings) -> S3Source:
    """One source (and so one client, which threads share) per bucket and settings: a client
    takes tens of milliseconds to make, and a page of PDF page images asks for one original
    per image."""
    return S3Source(f"s3://{bucket}", settings)


def _git_blob(uri: str, commit: str, path: str, max_bytes: int, settings) -> bytes:
    repository = GitSource(uri, settings.cache_dir)
    if not repository.git_dir.is_dir():
        raise SourceError(f"{uri}: no repository (or mirror of it) at {repository.git_dir}")
    blob = f"{commit}:{path}"

    def git(*args: str) -> bytes:
        try:
            done = subprocess.run(["git", "-C", str(repository.git_dir), *args],
                                  capture_output=True, timeout=GIT_READ_SECONDS,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SourceError(f"{uri}: git {args[0]} failed: {exc}") from exc
        if done.returncode != 0:
            raise SourceError(f"{uri}: no blob {blob} in the repository (any more)")
        return done.stdout

    if int(git("cat-file", "-s", blob).strip() or 0) > max_bytes:
        raise SourceError(f"{uri}: the blob {blob} is over {max_bytes} bytes")
    return git("cat-file", "blob", blob)
