"""Archives made in memory for the tests: one home for a zip of named members."""

from __future__ import annotations

import io
import zipfile


def zipped(members: dict[str, bytes | str], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A zip archive holding ``members`` (name to bytes or text), in order."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()
