"""A full disk named: what a write that ran out of space was writing, and what to do."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["naming_a_full_disk"]


@contextmanager
def naming_a_full_disk(what: str, path: Path | str) -> Iterator[None]:
    """Re-raises a write's full disk or quota (``ENOSPC``, ``EDQUOT``, which name no file) as
    an ``OSError`` saying ``no space left <what> <path>: free space or move the data folder``.

    Raises:
        OSError: The disk was full, named; any other error as it was.
    """
    try:
        yield
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise OSError(exc.errno, f"no space left {what} {path}: free space or move the "
                                     "data folder") from exc
        raise
