"""A container member's original as a file the views can open: read again from its container
(:func:`~rag_pipeline.core.ingest.member_originals.member_bytes`) and kept, by content digest, in
a private (0700) temporary folder of this process, removed when it exits."""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path, PurePosixPath

from rag_pipeline.core.ingest.member_originals import member_bytes

_lock = threading.Lock()
_folder: tempfile.TemporaryDirectory[str] | None = None


def member_file(path: str) -> Path | None:
    """A file holding the bytes of the container member at ``path`` (None when no container on
    the path holds it any more)."""
    global _folder
    data = member_bytes(path)
    if data is None:
        return None
    digest = hashlib.sha256(data).hexdigest()
    with _lock:
        if _folder is None:
            _folder = tempfile.TemporaryDirectory(prefix="rag-pipeline-members-")
        target = Path(_folder.name) / digest / PurePosixPath(path).name
        if not target.is_file():
            target.parent.mkdir(mode=0o700, exist_ok=True)
            partial = target.with_name(target.name + ".partial")
            with open(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
                out.write(data)
            partial.replace(target)
    return target
