"""What a container file (an archive, a mail) hands back: its members, each bounded and safe.

A container format (:class:`~rag_pipeline.core.ingest.formats.base.ContainerFormat`) yields
:class:`Member` values; :mod:`rag_pipeline.core.ingest.containers` turns each into a document
of its own. The limits here are what keeps a hostile container from eating a run: a member
count, a budget of expanded bytes shared by a whole tree of nested containers, a compression
ratio, a nesting depth, and member paths that stay inside their container.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import BinaryIO

from rag_pipeline.core.ingest.extracted import Extracted, ExtractionError

RATIO_FLOOR_BYTES = 1024 * 1024
"""The compression ratio is judged only past 1 MiB expanded: a small file of one repeated
character compresses a thousand-fold and harms nobody."""


@dataclass(frozen=True)
class ContainerLimits:
    """Bounds on what one container file may expand to.

    Attributes:
        max_members: An archive with more members (directories not counted) fails unread.
        max_attachments: A mail with more attachments fails unread.
        max_expanded_bytes: The members of a container and of every container nested in it
            together expand to at most this; past it the outermost container fails.
        max_ratio: A member (or a compressed stream) expanding more than this many times its
            compressed size, past :data:`RATIO_FLOOR_BYTES`, is a bomb and fails.
        max_depth: Containers nest at most this deep (a zip in a mail is depth 2).
        max_reading_multiple: The members of a file's containers, nested ones too, are read in
            at most this many times ``max_document_seconds`` together (each member within
            ``max_document_seconds`` of its own); those not begun by then fail unread, so one
            archive of slow members cannot hold a run for its members times the limit.

    Raises:
        ValueError: If a limit is not positive.
    """

    max_members: int = 10_000
    max_attachments: int = 100
    max_expanded_bytes: int = 256 * 1024 * 1024
    max_ratio: float = 100.0
    max_depth: int = 3
    max_reading_multiple: float = 10.0

    def __post_init__(self) -> None:
        for name in ("max_members", "max_attachments", "max_expanded_bytes", "max_ratio", "max_depth",
                     "max_reading_multiple"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")


@dataclass
class Budget:
    """The expanded bytes a tree of containers may still produce (one per outermost file)."""

    limit: int
    used: int = 0

    @property
    def remaining(self) -> int:
        return self.limit - self.used

    def take(self, size: int) -> None:
        """Counts ``size`` more expanded bytes.

        Raises:
            ExtractionError: The container expands past the limit (a zip bomb, most likely).
        """
        self.used += size
        if self.used > self.limit:
            raise ExtractionError(f"expands to over {self.limit} bytes (max_expanded_bytes): a zip "
                                  "bomb or an archive too large to index")


@dataclass(frozen=True)
class Member:
    """One file inside a container.

    Attributes:
        name: Its path inside the container, ``/``-separated, relative; the document id is the
            container's id, ``/`` and this name.
        data: Its bytes (empty when it fails or is skipped).
        error: It fails alone with this reason (a path outside the container, a bomb).
        skip: It is skipped with this reason (a symlink or device entry).
        left_out: ``"hidden"`` (a name starting with ``.``: not part of the corpus) or
            ``"unnamed"`` (a file whose name is nothing once made safe): no document, counted
            in the container's notes (``members_hidden``, ``members_unnamed``).
    """

    name: str
    data: bytes = field(default=b"", repr=False)
    error: str | None = None
    skip: str | None = None
    left_out: str = ""


_DRIVE = re.compile(r"[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def printable_name(raw: str) -> str:
    """A name every table, URL and terminal can hold: bytes that were not UTF-8 (decoded to
    lone surrogates) shown as ``\\xNN``, control characters (a line break in a name) as
    ``_``."""
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raw = raw.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return _CONTROL.sub("_", raw)


def safe_member_name(raw: str) -> tuple[str, str | None]:
    """A member's path as a document id part, and why it is unsafe (``None`` when it is safe).

    A path is unsafe when it is absolute (``/etc/passwd``, ``\\share``, ``C:...``) or has a
    ``..`` part: extracting it would write outside the archive. Backslashes count as
    separators (archives made on Windows); ``.`` parts and empty parts are dropped; the name
    is made printable first (:func:`printable_name`). An unsafe
    path's name keeps its parts with each ``..`` shown as ``%2E%2E`` and a leading ``/`` as
    ``%2F``, so it names that entry and no other document (nothing normalises it away).
    """
    path = printable_name(raw.replace("\\", "/"))
    absolute = path.startswith("/") or bool(_DRIVE.match(path))
    parts = [part for part in path.split("/") if part not in ("", ".")]
    escapes = ".." in parts
    if not (absolute or escapes):
        return "/".join(parts), None
    shown = "/".join("%2E%2E" if part == ".." else part.replace(":", "%3A") for part in parts)
    reason = ("an absolute path" if absolute else "a '..' part")
    return ("%2F" if absolute else "") + shown, (
        f"member path {raw!r} has {reason}: it points outside the archive, never extracted")


def is_hidden(name: str) -> bool:
    """A member any part of whose path starts with ``.`` (``.git/``, ``._one.md`` resource
    forks of ``__MACOSX``): not part of the corpus, as hidden files in a folder are not."""
    return any(part.startswith(".") for part in name.split("/"))


def read_bounded(stream: BinaryIO, limit: int, what: str) -> bytes:
    """At most ``limit`` bytes of a decompressing stream, read in 1 MiB steps.

    Raises:
        ExtractionError: The stream holds more than ``limit`` bytes (``what`` names the limit).
    """
    chunks, size = [], 0
    while True:
        chunk = stream.read(min(1024 * 1024, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise ExtractionError(f"expands to over {limit} bytes ({what})")


def check_ratio(expanded: int, compressed: int, limits: ContainerLimits,
                kind: str = "zip") -> str | None:
    """Why ``expanded`` bytes from ``compressed`` ones is a bomb (a ``kind`` bomb), or ``None``."""
    if expanded > RATIO_FLOOR_BYTES and expanded > limits.max_ratio * max(compressed, 1):
        return (f"expands {expanded / max(compressed, 1):.0f} times its compressed size, over the "
                f"limit of {limits.max_ratio:g} (max_ratio): a {kind} bomb")
    return None


class UniqueNames:
    """Member names made unique in the order they come: ``name``, then ``stem (2).ext``,
    ``stem (3).ext``... for the same name again (each name's last number kept: 10,000 members
    of one name take linear time, not quadratic)."""

    def __init__(self) -> None:
        self._taken: set[str] = set()
        self._last: dict[str, int] = {}

    def __call__(self, name: str) -> str:
        candidate, number = name, self._last.get(name, 1)
        stem, ext = posixpath.splitext(name)
        while candidate in self._taken:
            number += 1
            candidate = f"{stem} ({number}){ext}"
        self._last[name] = number
        self._taken.add(candidate)
        return candidate


@dataclass
class Unpacking:
    """What one container's expansion may use: the limits, the shared budget, a member's size.

    Attributes:
        limits: The container limits.
        budget: Expanded bytes left for the whole tree of containers of one corpus file.
        max_member_bytes: A member larger than this fails alone (``max_document_bytes``).
    """

    limits: ContainerLimits
    budget: Budget
    max_member_bytes: int


@dataclass(frozen=True)
class Expansion:
    """A container read: its own document and its members.

    Attributes:
        own: The container's own document (a mail's message); ``None`` for an archive, whose
            own document is the list of its members.
        members: The members in order, read lazily (an archive streams them).
        notes: Facts about the container for its own record.
    """

    own: Extracted | None
    members: Iterable[Member]
    notes: tuple[tuple[str, str], ...] = ()
