"""The bytes of a container's member, read again from its container: a member's ``path`` is the
container's path, ``/`` and the member's name (``/corpus/mail.eml/offer.pdf``), which names no
file on disk, so a view of the original (its file, a PDF's page images) reads the container."""

from __future__ import annotations

import posixpath
from pathlib import Path, PurePosixPath

from rag_pipeline.core.ingest.extracted import ExtractionError, reader_failures
from rag_pipeline.core.ingest.formats import format_for
from rag_pipeline.core.ingest.formats.base import ContainerFormat
from rag_pipeline.core.ingest.members import Budget, ContainerLimits, Unpacking
from rag_pipeline.core.ingest.reading import ExtractionSettings


def member_bytes(path: str | Path, limits: ContainerLimits | None = None,
                 settings: ExtractionSettings | None = None) -> bytes | None:
    """The bytes of the container member at ``path``, or None when no container file on the path
    holds it (the container moved, changed or no longer reads).

    Args:
        path: A member's path as the documents table records it: the container file's path
            followed by the member's name inside it (members nested in members in turn).
        limits: The container limits to read under (the defaults when None).
        settings: The extraction settings whose ``max_document_bytes`` bounds one member.
    """
    found = container_on(path)
    if found is None:
        return None
    container, member = found
    return member_of(container.name, container.read_bytes(), member, limits, settings)


def container_on(path: str | Path) -> tuple[Path, str] | None:
    """The container file a member's ``path`` runs through, and the member's name inside it
    (``/corpus/mail.eml``, ``offer.pdf``); None when the path runs through no file."""
    parts = PurePosixPath(path).parts
    for cut in range(len(parts) - 1, 0, -1):
        container = Path(*parts[:cut])
        if container.is_file():
            return container, "/".join(parts[cut:])
        if container.exists():
            return None
    return None


def member_of(name: str, data: bytes, member: str, limits: ContainerLimits | None = None,
              settings: ExtractionSettings | None = None) -> bytes | None:
    """The bytes of the member ``member`` (members nested in members joined by ``/``) of the
    container file ``name`` whose bytes are ``data``, read under ``limits`` as a run reads it;
    None when it holds no such member."""
    limits = limits or ContainerLimits()
    unpacking = Unpacking(limits, Budget(limits.max_expanded_bytes),
                          (settings or ExtractionSettings()).max_document_bytes)
    return _inside(name, data, member, unpacking)


def _inside(name: str, data: bytes, rest: str, unpacking: Unpacking) -> bytes | None:
    fmt = format_for(Path(name))
    if not isinstance(fmt, ContainerFormat):
        return None
    stem = PurePosixPath(name).stem or name
    try:
        # The net a corpus run reads containers with: a reader's own exception is no answer.
        with reader_failures(fmt.name):
            for member in fmt.expand(data, stem, unpacking).members:
                if member.error is not None or member.skip is not None or member.left_out:
                    continue
                if member.name == rest:
                    return member.data
                if rest.startswith(member.name + "/"):
                    return _inside(posixpath.basename(member.name), member.data,
                                   rest[len(member.name) + 1:], unpacking)
    except ExtractionError:
        return None
    return None
