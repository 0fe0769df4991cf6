"""A document's original bytes read again from the source it was indexed from, for a view:
the object at ``s3://bucket/key``, or the blob at ``git+<url>@<commit>:<path>`` (the locations
:meth:`~.s3.S3Source.location` and :meth:`~.git.GitSource.location` write). A member of an
archive or a mail (``s3://bucket/p/a.zip/x.md``) is no object or blob of its own: it is read
again from its container, the longest part of its location that is one. The caller checks the
bytes against the sha256 the index recorded; nothing here decides what they are."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import PurePosixPath

from rag_pipeline.core.ingest.sources.base import OriginalGoneError, SourceError
from rag_pipeline.core.ingest.sources.git import LOCATION, GitSource
from rag_pipeline.core.ingest.sources.s3 import S3Source

__all__ = ["read_original"]


def read_original(location: str, max_bytes: int, settings, sha256: str | None = None) -> bytes:
    """The bytes at ``location`` (an ``s3://`` or ``git+`` location), at most ``max_bytes``:
    the object or blob there, else (none there, or ``sha256`` given and not its bytes') the
    member of the container it names.

    Args:
        settings: A :class:`~rag_pipeline.core.ingest.sources.SourceSettings`: the object
            store's settings, and the folder remote repositories are mirrored in.
        sha256: The digest of the bytes the index recorded, when known.

    Raises:
        OriginalGoneError: No such object, blob or member (any more), or a file larger than
            ``max_bytes``.
        SourceError: The endpoint or repository cannot be reached or refuses the reader.
    """
    if location.startswith("s3://"):
        bucket, _, path = location.removeprefix("s3://").partition("/")
        source = _bucket(bucket, settings.s3)

        def read(key: str) -> bytes:
            return _s3_object(source, bucket, key, max_bytes)
    else:
        found = LOCATION.fullmatch(location)
        if found is None:
            raise SourceError(f"{location}: not an s3:// or git+ location of a document")
        repository, commit, path = (GitSource(found["uri"], settings.cache_dir), found["commit"],
                                    found["path"])

        def read(key: str) -> bytes:
            return repository.blob(commit, key, max_bytes)
    try:
        data = read(path)
    except OriginalGoneError:
        member = _member(read, path, max_bytes, sha256)
        if member is None:
            raise
        return member
    if sha256 is not None and _digest(data) != sha256:
        return _member(read, path, max_bytes, sha256) or data
    return data


def _member(read: Callable[[str], bytes], path: str, max_bytes: int,
            sha256: str | None) -> bytes | None:
    """The member at ``path`` of the container file its longest leading part names (a part
    whose name a container format claims), or None."""
    from rag_pipeline.core.ingest.formats import format_for
    from rag_pipeline.core.ingest.formats.base import ContainerFormat
    from rag_pipeline.core.ingest.member_originals import member_of
    from rag_pipeline.core.ingest.reading import ExtractionSettings

    parts = PurePosixPath(path).parts
    for cut in range(len(parts) - 1, 0, -1):
        container = "/".join(parts[:cut])
        if not isinstance(format_for(PurePosixPath(container)), ContainerFormat):
            continue
        try:
            data = read(container)
        except OriginalGoneError:
            continue
        member = member_of(parts[cut - 1], data, "/".join(parts[cut:]),
                           settings=ExtractionSettings(max_document_bytes=max_bytes))
        if member is not None and (sha256 is None or _digest(member) == sha256):
            return member
    return None


def _digest(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _s3_object(source: S3Source, bucket: str, key: str, max_bytes: int) -> bytes:
    from botocore.exceptions import BotoCoreError, ClientError

    location = f"s3://{bucket}/{key}"
    try:
        response = source.client.get_object(Bucket=bucket, Key=key)
        data = response["Body"].read(max_bytes + 1)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code", "") in ("NoSuchKey", "404"):
            raise OriginalGoneError(f"{location}: the object is gone") from exc
        raise source.source_error(exc) from exc
    except BotoCoreError as exc:
        raise source.source_error(exc) from exc
    if len(data) > max_bytes:
        raise OriginalGoneError(f"{location}: over {max_bytes} bytes")
    return data


@functools.lru_cache(maxsize=16)
def _bucket(bucket: str, settings) -> S3Source:
    """One source (and so one client, which threads share) per bucket and settings: a client
    takes tens of milliseconds to make, and a page of PDF page images asks for one original
    per image."""
    return S3Source(f"s3://{bucket}", settings)
