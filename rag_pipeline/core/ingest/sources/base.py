"""What every corpus source offers: a listing of entries with fingerprints, and their bytes.

A source is a local folder, an S3 prefix or a git commit's tree (one module each). The corpus
(:mod:`rag_pipeline.core.ingest.corpus`) lists a source once per run, compares each entry's
fingerprint with the one recorded on its document, and opens only the entries whose fingerprint
changed; reconciliation (:mod:`rag_pipeline.core.ingest.reconcile`) is computed from the same
fingerprints.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


class SourceError(Exception):
    """The source as a whole cannot be listed or read (a missing folder, bucket or ref, refused
    credentials, an unreachable endpoint): the run fails with this one line and publishes
    nothing."""


class OriginalGoneError(SourceError):
    """A document's original is not where it was indexed from any more (the object deleted,
    the blob gone from the repository), or is larger than it could have been: the source
    itself answered."""


@dataclass(frozen=True)
class Entry:
    """One listed object of a source.

    Attributes:
        document_id: The posix path of the entry below the source's root (the folder, the
            prefix, the commit's tree).
        fingerprint: Changes whenever the bytes may have changed, prefixed by its kind
            (``stat:``, ``etag:``, ``blob:``) so fingerprints of two kinds never match.
        size: The size in bytes when the listing says it (checked against the limit before
            anything is read), else ``None``.
        refused: Why the entry can never be a document (a submodule, an unsafe object key):
            it becomes a ``failed`` record with this reason, unread.
        skipped: Why the entry is no document although it is listed (a symlinked folder): it
            becomes a ``skipped`` record with this reason.
    """

    document_id: str
    fingerprint: str
    size: int | None = None
    refused: str | None = None
    skipped: str | None = None


@runtime_checkable
class Source(Protocol):
    """A corpus the index reads: list it, then open the entries that changed."""

    uri: str
    """How the source is named in logs, reports and errors (a folder path or a URI)."""

    content_addressed: bool
    """Equal fingerprints mean equal bytes (an ETag with its size, a blob id): a rename is then
    recognised without reading the entry."""

    hidden: tuple[str, ...]
    """The hidden names (a segment starting with ``.``) the last :meth:`entries` left out, each
    once at its top (``.git``, not its files), sorted: not part of the corpus, but reported."""

    def entries(self) -> list[Entry]:
        """Every entry of the corpus, sorted by document id (hidden names left out, and kept in
        :attr:`hidden`).

        Raises:
            SourceError: If the source cannot be listed.
        """
        ...

    def read(self, entry: Entry, max_bytes: int) -> bytes:
        """The entry's bytes, at most ``max_bytes``.

        Raises:
            ExtractionError: With the reason this entry cannot be read (the others still are).
            SourceError: If the source itself went away while being read.
        """
        ...

    def prefetch(self, entries: list[Entry], max_bytes: int) -> None:
        """A hint: these entries will be read next, in this order (a source whose reads wait on
        the network starts them ahead; the others ignore it). Nothing else is ever fetched."""
        ...

    def location(self, document_id: str) -> str:
        """Where a document is, as its record's ``path`` (a file path or a URI)."""
        ...

    def revision(self) -> str | None:
        """The version of the source the listing read (a git commit), else ``None``."""
        ...

    def watch_token(self) -> str:
        """A cheap digest of the source's state for the corpus watch: it changes when any entry
        was added, changed or removed (``missing`` when the source is not there)."""
        ...

    def still_there(self) -> None:
        """Checks, after a run read the source, that it did not disappear meanwhile.

        Raises:
            SourceError: If it did.
        """
        ...

    def close(self) -> None:
        """Releases what reading held open (a ``git cat-file`` process)."""
        ...


def shown_file_name(name: str) -> str:
    """``name`` as text every encoder accepts: Python decodes file-name bytes that are not
    UTF-8 to lone surrogates (``os.fsdecode``), which no table, JSON or terminal can hold; they
    are shown as ``\\xNN``. A valid name is returned unchanged."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name


def enclosing_ids(document_id: str) -> list[str]:
    """The ids ``document_id`` runs on past, outermost first (``a.zip`` and ``a.zip/b`` for
    ``a.zip/b/c.md``): the documents it is a member of, where a corpus holds them (a folder is
    no document, whatever its name)."""
    return [document_id[:i] for i, char in enumerate(document_id) if char == "/"]


def hidden_top(document_id: str) -> str | None:
    """The name up to its first segment that starts with ``.`` (``docs/.cache`` for
    ``docs/.cache/x.md``), or ``None`` when no segment does. A hidden name (``.git``, ``.cache``,
    editor swap files) is not part of the corpus; this is how it is reported."""
    parts = document_id.split("/")
    for depth, part in enumerate(parts):
        if part.startswith("."):
            return "/".join(parts[:depth + 1])
    return None


def unsafe_key_reason(key: str, kind: str = "key") -> str | None:
    """Why an object key or tree path (``kind``: what the message calls it) cannot be a
    document id: a trailing ``/`` (an object named like a folder, with bytes), an empty, ``.``
    or ``..`` segment, a backslash, or a control character (``None`` when it is safe)."""
    parts = key.split("/")
    if key.endswith("/") and key.strip("/"):
        return (f"the {kind} {shown_key(key)} ends in '/' (an object named like a folder, holding "
                "bytes): refused; rename it without the '/'")
    if any(part in ("", ".", "..") for part in parts) or key.startswith("/"):
        return f"the {kind} {shown_key(key)} holds an empty, '.' or '..' segment: refused"
    if "\\" in key:
        return f"the {kind} {shown_key(key)} holds a backslash: refused"
    if any(unicodedata.category(c) == "Cc" for c in key):
        return f"the {kind} {shown_key(key)} holds a control character: refused"
    return None


def shown_key(key: str) -> str:
    """``key`` as one printable ASCII line (``bell\\x07.md``): how an unsafe key is named."""
    return key.encode("unicode_escape", "backslashreplace").decode("ascii")
