"""A container member's original as a file the views can open: read again from its container
(:func:`~rag_pipeline.core.ingest.member_originals.member_bytes`) and kept, by content digest, in
a private (0700) temporary folder of this process, removed when it exits. While the container
file is unchanged (the same device, inode, size and times), its member's copy is served again
without the container being read."""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path, PurePosixPath

from rag_pipeline.core.ingest.member_originals import container_on, member_bytes
from rag_pipeline.core.runtime.recent import Recent

_lock = threading.Lock()
_folder: tempfile.TemporaryDirectory[str] | None = None
_COPIES: Recent[tuple[str, int, int, int, int, int], Path] = Recent(256)
"""(a member's path, its container file's device, inode, size, modified and changed times) ->
the copy of the member's bytes read from that file."""


def member_file(path: str) -> Path | None:
    """A file holding the bytes of the container member at ``path`` (None when no container on
    the path holds it any more)."""
    global _folder
    found = container_on(path)
    if found is None:
        return None
    try:
        info = found[0].stat()
    except OSError:
        return None
    key = (path, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    kept = _COPIES.get(key)
    if kept is not None and kept.is_file():
        return kept
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
    _COPIES.put(key, target)
    return target
