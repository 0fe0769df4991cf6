"""A document's original bytes read again from the source it was indexed from, for a view:
the object at ``s3://bucket/key``, or the blob at ``git+<url>@<commit>:<path>`` (the locations
:meth:`~.s3.S3Source.location` and :meth:`~.git.GitSource.location` write). The caller checks
the bytes against the sha256 the index recorded; nothing here decides what they are."""

from __future__ import annotations

import functools

from rag_pipeline.core.ingest.sources.base import SourceError
from rag_pipeline.core.ingest.sources.git import LOCATION, GitSource
from rag_pipeline.core.ingest.sources.s3 import S3Source

__all__ = ["read_original"]


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
    found = LOCATION.fullmatch(location)
    if found is None:
        raise SourceError(f"{location}: not an s3:// or git+ location of a document")
    return GitSource(found["uri"], settings.cache_dir).blob(found["commit"], found["path"],
                                                           max_bytes)


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
