"""Reading a corpus file's bytes safely, within the limits every document shares.

A file is checked on its metadata before anything is opened: a link out of the corpus, a loop,
a special file or an oversized file fails with its reason, never an exception that stops a run.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from rag_pipeline.core.ingest.extracted import ExtractionError, FileVanishedError
from rag_pipeline.core.ingest.reading_limits import DEFAULT_MAX_DOCUMENT_SECONDS

DEFAULT_MAX_DOCUMENT_BYTES = 20 * 1024 * 1024
"""20 MiB: about four hours of embedding on two CPU cores; a larger file is most likely a dump."""


@dataclass(frozen=True)
class ExtractionSettings:
    """Limits that apply to every document.

    Attributes:
        max_document_bytes: A file larger than this fails with its size as the reason, unread.
        max_document_seconds: A document whose reading takes longer than this fails with the
            limit as the reason (:mod:`~rag_pipeline.core.ingest.reading_limits`; OCR not counted).
        retry_failed: Extract failed documents again even when their file did not change
            (otherwise a failed file is retried only once it changes).

    Raises:
        ValueError: If ``max_document_bytes`` or ``max_document_seconds`` is not positive.
    """

    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
    retry_failed: bool = False
    max_document_seconds: float = DEFAULT_MAX_DOCUMENT_SECONDS

    def __post_init__(self) -> None:
        if self.max_document_bytes < 1:
            raise ValueError(f"max_document_bytes must be positive, got {self.max_document_bytes}")
        if not self.max_document_seconds > 0:
            raise ValueError(f"max_document_seconds must be positive, got "
                             f"{self.max_document_seconds}")


_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind_of(mode: int) -> str:
    return next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")


EMPTY_FILE = "an empty file (0 bytes): nothing to read"
"""The reason of a file (or a container's member) of no bytes, whatever its format would say
of it (PDFium calls it a "data format error")."""

LINK_TARGETS = (
    (re.compile(r"outside the corpus root: resolves to .*", re.DOTALL),
     "outside the corpus root: a symlink to a file elsewhere"),
    (re.compile(r"broken symlink: .* does not exist", re.DOTALL),
     "broken symlink: its target does not exist"),
    (re.compile(r"a symlink to .*: not followed \(that file is read under its own name\)",
                re.DOTALL),
     "a symlink to another file of the corpus: not followed (that file is read under its own "
     "name)"),
    (re.compile(r"a symlink into .*, a hidden name: not followed, not part of the corpus",
                re.DOTALL),
     "a symlink into a hidden name: not followed, not part of the corpus"),
)
"""The reasons that name where a symlink points (:func:`read_document_bytes`'s, and
:func:`~rag_pipeline.core.ingest.sources.local.local_entry`'s skips), each as it reads without
the target."""


def without_link_target(reason: str) -> str:
    """``reason`` without the path a symlink points to (an absolute path, another document's
    name): what a reader restricted by ``[access]`` is told about a link they may read, whose
    target may be a file they may not."""
    for pattern, shown in LINK_TARGETS:
        if pattern.fullmatch(reason):
            return shown
    return reason


def read_document_bytes(path: Path, corpus_root: Path, max_bytes: int) -> bytes:
    """The bytes of a regular file inside the root, checked before anything is opened.

    The checks run on the file's metadata (``stat``), in this order: a symlink loop, a target
    outside the root, a missing target, a special file (directory, named pipe, device, socket),
    and the size. Only a regular file is opened, non-blocking and without following a link
    swapped in after the checks, and it must still be the file that was checked.

    Raises:
        ExtractionError: With the reason the file cannot be a document.
    """
    info: os.stat_result | None = None
    missing: OSError | None = None
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ExtractionError("symlink loop: following the link never reaches a file") from exc
        missing = exc
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError) as exc:  # Python 3.11 raises RuntimeError on a loop
        raise ExtractionError("symlink loop: following the link never reaches a file") from exc
    if not resolved.is_relative_to(corpus_root.resolve()):
        raise ExtractionError(f"outside the corpus root: resolves to {resolved}")
    if missing is not None or info is None:
        if path.is_symlink():
            raise ExtractionError(f"broken symlink: {resolved} does not exist") from missing
        if isinstance(missing, FileNotFoundError):
            raise FileVanishedError(f"{UNREADABLE}: {missing.strerror or missing}") from missing
        raise ExtractionError(f"{UNREADABLE}: {missing.strerror or missing}") from missing
    if not stat.S_ISREG(info.st_mode):
        raise ExtractionError(f"not a regular file: {_kind_of(info.st_mode)}, never opened")
    if info.st_size > max_bytes:
        raise ExtractionError(f"too large: {info.st_size} bytes, over the limit of {max_bytes} "
                              "bytes per document (max_document_bytes)")
    flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(resolved, flags)
    except OSError as exc:
        raise ExtractionError(f"{UNREADABLE}: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(handle.fileno())
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise ExtractionError("changed while being read: the file was replaced after its "
                                  "checks")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ExtractionError(f"too large: over the limit of {max_bytes} bytes per document "
                              "(max_document_bytes); the file grew while being read")
    return data


UNREADABLE = "unreadable"
"""How the failure of a regular file the system would not read begins (permission denied, an
I/O error)."""

RUN_SPENT = "the run's OCR time of"
"""How the failure of a document the run's OCR budget stopped begins."""
STORE_REFUSED = "the object store refused to read it"
"""How the failure of an object the store listed and would not give begins (archived to
Glacier, a key the reader may not use, throttled): a state of the object, not of its bytes."""
RETRIED_EACH_RUN = ("too large", RUN_SPENT, STORE_REFUSED, "deleted while being read",
                    "changed while being read")
"""Failures a run checks again although the file did not change: a size refusal (the limit may
have been raised, and checking costs a ``stat``), a document the run's OCR budget stopped (the
next run goes on where it stopped), and a read that failed for a reason of the moment: an
object the store refused (restored, or its policy changed, with the same ETag), a file or
object deleted or replaced while it was read (back with the same bytes by the next run)."""


BYTES_NOT_READ = (UNREADABLE, STORE_REFUSED)
"""How the failures of an entry that may be a document and whose bytes were not read begin: a
file without a reader's suffix that fails so is ``failed``, not ``skipped`` (it may be a README
or a team's notes, read as text when it is text)."""


def kept_failed(error: str | None, settings: ExtractionSettings) -> bool:
    """A failure with this ``error`` stands while its file is unchanged: retries back off until
    the file changes, unless ``settings.retry_failed`` or the failure is one
    :data:`RETRIED_EACH_RUN`."""
    return not settings.retry_failed and not (error or "").startswith(RETRIED_EACH_RUN)
